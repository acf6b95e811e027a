// The tables' hot path is the merge it replaced: the same states (byte for byte in the merge changelog),
// the same decisions and the same `.latest` rows and bytes, for generated histories of events, with states
// read back from the changelog between events as a restore would. reference-merge.ts is the merge as it was.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flattenJsonFast, type Leaves } from '../../../../processors/dedupe-router/fast-json.js';
import { fieldPaths, flattenFields } from '../../../../processors/dedupe-router/field-paths.js';
import { isJsonObject, parseJsonText, scalarText } from '../../../../processors/dedupe-router/parse-body.js';
import {
  applyEvent,
  type EntityState,
  latestValue,
  type MergeEvent,
  tableFields,
} from '../../../../processors/tables/merge.js';
import { createSerde, type Serde } from '../../../../schemas/serde.js';
import { valueSubject } from '../../../../schemas/topics.js';
import { type LocalRegistry, localRegistry } from '../../../../tools/bench/local-registry.js';
import * as reference from './reference-merge.js';

let registry: LocalRegistry;
let serde: Serde;
let latestId: number;
beforeAll(async () => {
  registry = await localRegistry();
  serde = createSerde({ registryUrl: registry.url, timeoutMs: 2_000 });
  latestId = registry.idOf.get(valueSubject('entity.user.latest'))!;
});
afterAll(() => registry.close());

// Keys that collide on purpose: with each other, with Object.prototype, with integer-like ordering.
const key = fc.constantFrom(
  'id',
  'name',
  'status',
  'amount',
  'commission',
  'statusDate',
  'savings',
  'a',
  'b',
  '1',
  '10',
  '__proto__',
  'constructor',
  'toString',
  '__typename',
  'é',
  'a.b',
);
const leafText = fc.oneof(
  fc.string({ maxLength: 8 }).map((s) => JSON.stringify(s)),
  fc.string({ unit: 'grapheme', maxLength: 6 }).map((s) => JSON.stringify(s)),
  fc.constantFrom(
    '210.10',
    '-0',
    '1e400',
    '12345678901234567890',
    '0.1',
    'true',
    'false',
    'null',
    '[]',
    '[1,"x"]',
    '{}',
  ),
  fc.constantFrom(
    '"2026-11-20T10:00:00Z"',
    '"2026-11-20T09:00:00+01:00"',
    '"2026-11-21T00:00:00.5Z"',
    '"not a date"',
  ),
);
/** A JSON object's text, keys unique, nested up to three deep. */
const objectText: fc.Arbitrary<string> = fc.letrec<{ object: string; value: string }>((tie) => ({
  object: fc
    .uniqueArray(fc.tuple(key, tie('value')), { selector: ([k]) => k, maxLength: 5 })
    .map((entries) => `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`),
  value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, leafText, tie('object')),
})).object;

/** objectText's shapes, with whitespace between tokens and keys written with escapes as well. */
const keyText = fc.oneof(
  key.map((k) => JSON.stringify(k)),
  fc.constantFrom('"__typ\\u0065name"', '"\\u0069d"', '"a\\"b"', '"\\u005f_proto__"', '""', '"x\\u002ey"'),
);
const space = fc.constantFrom('', ' ', '\n  ', '\t');
const spacedObjectText: fc.Arbitrary<string> = fc.letrec<{ object: string; value: string }>((tie) => ({
  object: fc
    .tuple(fc.array(fc.tuple(keyText, tie('value'), space, space), { maxLength: 5 }), space)
    .map(
      ([entries, end]) => `{${entries.map(([k, v, a, b]) => `${a}${k}${b}:${a}${v}${b}`).join(',')}${end}}`,
    ),
  value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, leafText, tie('object')),
})).object;

/** The values the merge read from an event's data before flattenJsonFast: the parse tree, flattened. */
function flattenedByTree(text: string): Map<string, string | null> {
  const record = reference.parseEventData(text);
  const out = new Map<string, string | null>();
  if (isJsonObject(record))
    for (const [path, value] of flattenFields(record)) out.set(path, scalarText(value));
  return out;
}

/** A record with many leaves (more than the merge searches for a field out of its data's order). */
const wideObjectText: fc.Arbitrary<string> = fc
  .uniqueArray(fc.tuple(fc.oneof(key, fc.string({ minLength: 1, maxLength: 4 })), leafText), {
    selector: ([k]) => k,
    minLength: 17,
    maxLength: 40,
  })
  .map((entries) => `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`);

const webhookId = fc.constantFrom('a', 'b', 'aa', 'é', 'e\u0301', '\u{1F600}', 'z');
const eventArb = fc
  .record({
    webhookId,
    entity: fc.constantFrom('EnergySwitch', 'User'),
    // One event in four a deletion.
    deleted: fc.integer({ min: 0, max: 3 }).map((n) => n === 0),
    occurredAt: fc.integer({ min: 0, max: 4 }),
    data: fc.oneof({ weight: 4, arbitrary: objectText }, { weight: 1, arbitrary: wideObjectText }),
    extraPaths: fc.array(fc.constantFrom('missing', 'commission.status', 'a'), { maxLength: 2 }),
    dropSome: fc.boolean(),
    // Fields listed in another order than the data's (the merge looks them up, not at the same index).
    reversed: fc.boolean(),
  })
  .map(({ extraPaths, dropSome, reversed, ...e }): MergeEvent => {
    const record = parseJsonText(e.data);
    const paths = isJsonObject(record) ? fieldPaths(record) : [];
    const fields = [...(dropSome ? paths.filter((_, i) => i % 2 === 0) : paths), ...extraPaths];
    return { ...e, fields: reversed ? fields.reverse() : fields };
  });
const step = fc.record({ key: fc.constantFrom('k1', 'k2'), event: eventArb, restore: fc.boolean() });

/** The merge changelog's codec (merge-store.ts). */
const encodeState = (state: EntityState) => JSON.stringify(state);
const decodeState = (text: string) => JSON.parse(text) as EntityState;

describe('the merge, fast path against the merge it replaced', () => {
  it('gives the same states, decisions, rows and `.latest` bytes for every history', async () => {
    await serde.encode(latestId, { fields: {}, occurredAt: 0, webhookId: '' });
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 25 }), (steps) => {
        const fast = new Map<string, EntityState>();
        const slow = new Map<string, EntityState>();
        for (const { key: k, event, restore } of steps) {
          const got = applyEvent(fast.get(k), event);
          const want = reference.applyEvent(slow.get(k), event);
          expect(got.stateChanged).toBe(want.stateChanged);
          expect(got.tableChanged).toBe(want.tableChanged);
          expect(encodeState(got.state)).toBe(encodeState(want.state));
          const row = latestValue(got.state);
          const wantRow = reference.latestValue(want.state);
          expect(JSON.stringify(row)).toBe(JSON.stringify(wantRow));
          // The same row object again (memoised), still equal.
          expect(latestValue(got.state)).toBe(row);
          if (row) expect(serde.encodeCached(latestId, row)).toEqual(serde.encodeCached(latestId, wantRow));
          // A state read back from the changelog (plain objects, not the merge's own) merges the same.
          fast.set(k, restore ? decodeState(encodeState(got.state)) : got.state);
          slow.set(k, restore ? decodeState(encodeState(want.state)) : want.state);
        }
      }),
      { numRuns: 1_500 },
    );
  }, 120_000);

  it('flattens event data in one pass to the values the parse tree gives, or leaves it to the tree', () => {
    let handled = 0;
    const out: Leaves = { paths: [], values: [], count: 0 };
    fc.assert(
      fc.property(fc.oneof(objectText, spacedObjectText), (text) => {
        let want: Map<string, string | null> | undefined;
        try {
          want = flattenedByTree(text);
        } catch {
          // Not JSON lossless-json reads (a key given twice with two values): the tree's error stands.
        }
        if (!flattenJsonFast(text, out)) {
          // Left to the tree, with nothing read half-way left behind.
          expect(out.count).toBe(0);
          return;
        }
        handled++;
        expect(want).toBeDefined();
        const got = out.paths.slice(0, out.count).map((path, n) => [path, out.values[n]] as const);
        // Each path once, with the tree's value.
        expect(new Set(got.map(([path]) => path)).size).toBe(out.count);
        expect(got.sort()).toEqual([...want!].sort());
      }),
      { numRuns: 4_000 },
    );
    // Many are taken on (the rest have a key with a dot, empty, `__proto__` or given twice: odd keys are common here).
    expect(handled).toBeGreaterThan(1_000);
  });

  it('leaves an object of many keys to the tree, whose flattening is linear, and merges it the same', () => {
    // 96,000 keys (1 MiB): its duplicate check took 69 s in one pass, past the transaction's timeout.
    const huge = `{${Array.from({ length: 96_000 }, (_, n) => `"k${n}":${n}`).join(',')}}`;
    const out: Leaves = { paths: [], values: [], count: 0 };
    expect(flattenJsonFast(huge, out)).toBe(false);
    expect(out.count).toBe(0);
    const data = `{"__typename":"User","id":"u1",${Array.from({ length: 300 }, (_, n) => `"k${n}":"v${n}"`).join(',')}}`;
    const record = parseJsonText(data);
    const event: MergeEvent = {
      webhookId: 'a',
      entity: 'User',
      deleted: false,
      occurredAt: 1,
      data,
      fields: isJsonObject(record) ? fieldPaths(record) : [],
    };
    expect(encodeState(applyEvent(undefined, event).state)).toBe(
      encodeState(reference.applyEvent(undefined, event).state),
    );
  });

  it('shows of a path and its ancestors the newer one, as the merge it replaced did, for any dotted paths', () => {
    const part = fc.constantFrom('', 'a', 'b', 'a.b', '.', 'é');
    const path = fc.array(part, { minLength: 1, maxLength: 4 }).map((parts) => parts.join('.'));
    const candidate = fc.record({
      at: fc.integer({ min: 0, max: 3 }),
      webhookId: fc.constantFrom('a', 'b', 'c'),
      value: fc.constantFrom('1', null),
    });
    fc.assert(
      fc.property(fc.dictionary(path, fc.array(candidate, { minLength: 1, maxLength: 2 })), (fields) => {
        const state: EntityState = { deletedAt: null, seenAt: { at: 0, webhookId: 'a' }, fields };
        expect(JSON.stringify(tableFields(state))).toBe(JSON.stringify(reference.tableFields(state)));
      }),
      { numRuns: 5_000 },
    );
    // 500 levels with 1,800 leaves at the bottom: 1.4 s a merge when each prefix was sliced and looked up.
    const deep = 'a.'.repeat(500);
    const wide: EntityState = {
      deletedAt: null,
      seenAt: { at: 1, webhookId: 'w' },
      fields: Object.fromEntries([
        ['a', [{ at: 0, webhookId: 'w', value: null }]],
        ...Array.from({ length: 1_800 }, (_, n) => [`${deep}k${n}`, [{ at: 1, webhookId: 'w', value: '1' }]]),
      ]),
    };
    expect(Object.keys(tableFields(wide)!)).toHaveLength(1_800);
  });

  it('parses event data as lossless-json did, numbers and odd keys included', () => {
    fc.assert(
      fc.property(objectText, (text) => {
        expect(parseJsonText(text)).toEqual(reference.parseEventData(text));
      }),
      { numRuns: 2_000 },
    );
  });
});
