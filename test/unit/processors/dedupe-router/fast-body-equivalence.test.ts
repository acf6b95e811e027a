// The fast body parse (and the fast write-back of parsed values) is the same function as lossless-json's: every fixture and thousands of generated
// bodies (whitespace, key order, escapes and unicode, long and exotic numbers, nested data, 2 KB+ bodies,
// duplicate keys, broken JSON, a BOM, bytes that are not UTF-8) routed once with the fast parse and once
// with lossless-json alone give byte-identical outputs: topics, keys, Avro values, dead-letter reasons
// and messages.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import avro from 'avsc';
import fc from 'fast-check';
import { LosslessNumber, parse, stringify } from 'lossless-json';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import {
  NOT_HANDLED,
  parseJsonFast,
  stringifyJsonFast,
} from '../../../../processors/dedupe-router/fast-json.js';
import { type RouteDecision, type RouteOutput, route } from '../../../../processors/dedupe-router/route.js';
import type { RawEnvelope } from '../../../../schemas/raw-envelope.js';
import { envelopeFor, FIXTURES_DIR } from '../fixtures.js';

const schemasDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../../schemas');
const typeOf = (name: string) =>
  avro.Type.forSchema(JSON.parse(readFileSync(path.join(schemasDir, `${name}.avsc`), 'utf8')));
const SCHEMA_OF: Record<RouteOutput['topic'], string> = {
  'webhooks.unique': 'raw-envelope',
  'entity.user': 'entity-event',
  'entity.account': 'entity-event',
  'entity.document': 'entity-event',
  'entity.todo': 'entity-event',
  'entity.other': 'entity-event',
  'entity.energy-switch': 'entity-energy-switch',
  'entity.energy-switch-commission': 'entity-energy-switch-commission',
  'webhooks.failures': 'webhook-failure',
  'webhooks.dlq': 'dead-letter',
};
const types = new Map(Object.entries(SCHEMA_OF).map(([topic, name]) => [topic, typeOf(name)]));

/** route() with the body parsed and written back by lossless-json alone: the router before the fast paths. */
let routeLossless: typeof route;
beforeAll(async () => {
  vi.resetModules();
  vi.doMock('../../../../processors/dedupe-router/fast-json.js', () => {
    const notHandled = Symbol('not handled');
    return { NOT_HANDLED: notHandled, parseJsonFast: () => notHandled, stringifyJsonFast: () => notHandled };
  });
  routeLossless = (await import('../../../../processors/dedupe-router/route.js')).route;
  vi.doUnmock('../../../../processors/dedupe-router/fast-json.js');
});

/** A decision as bytes: what the router would write (topic, key, Avro value) and why. */
function written(decision: RouteDecision) {
  return {
    kind: decision.kind,
    reason: decision.reason,
    outputs: decision.outputs.map((o) => ({
      topic: o.topic,
      key: o.key,
      value: types.get(o.topic)!.toBuffer(o.value).toString('hex'),
    })),
  };
}

function expectSameRoute(envelope: RawEnvelope): void {
  const settings = { webhookDateOffsetMinutes: 60, maxAgeMs: 72 * 3_600_000, maxAheadMs: 60_000 };
  const decision = route(envelope, settings);
  expect(written(decision)).toEqual(written(routeLossless(envelope, settings)));
  const kind = `${decision.kind} ${decision.reason ?? decision.outputs.map((o) => o.topic).join(' ')}`;
  reached.set(kind, (reached.get(kind) ?? 0) + 1);
}

/**
 * A value as plain data that shows everything the router could tell apart: each object's prototype and
 * its own keys in order, each number's class and text. (toStrictEqual would not see key order, and
 * reads an own key `constructor` as the object's class.)
 */
function canonical(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (value instanceof LosslessNumber) return { number: value.value };
  if (Array.isArray(value)) return { array: value.map(canonical) };
  return {
    prototype: Object.getPrototypeOf(value) === Object.prototype ? 'Object' : 'other',
    entries: Object.keys(value).map((k) => [k, canonical((value as Record<string, unknown>)[k])]),
  };
}

/** Text-level: the fast parse answers lossless-json's value, or leaves the text to it. */
function expectSameParse(text: string): 'fast' | 'lossless' {
  const fast = parseJsonFast(text);
  let expected: unknown;
  try {
    expected = parse(text);
  } catch {
    expect(fast).toBe(NOT_HANDLED);
    return 'lossless';
  }
  if (fast === NOT_HANDLED) return 'lossless';
  // Written back (an event's `data`) as lossless-json writes it.
  expect(stringifyJsonFast(expected)).toBe(stringify(expected));
  // Types, prototypes, number texts and key order (an event's `data` is the text written back).
  expect(canonical(fast)).toEqual(canonical(expected));
  return 'fast';
}

// ---- generated bodies ----

/** A number's text as a platform may send it: long, exotic, exact. */
const numberText = fc.stringMatching(/^-?(0|[1-9][0-9]{0,40})(\.[0-9]{1,25})?([eE][+-]?[0-9]{1,3})?$/);
const unicodeText = fc.string({ unit: 'grapheme', maxLength: 30 });
const anyText = fc.oneof(
  fc.string({ maxLength: 20 }),
  unicodeText,
  fc.string({ unit: 'binary', maxLength: 10 }),
  // The characters JSON escapes or that are easy to get wrong: quotes, controls, lone surrogates, U+2028.
  fc
    .array(
      fc.constantFrom(
        'é',
        '\u2028',
        '\ud800',
        '\udc00',
        '"',
        '\\',
        '\n',
        '\u0000',
        '\u001f',
        '/',
        '€',
        '😀',
        'a',
      ),
      {
        maxLength: 8,
      },
    )
    .map((parts) => parts.join('')),
  fc.constantFrom('', '__proto__', 'constructor', '__typename', 'id', '1', '007'),
);

/** A JSON value tree whose numbers are kept as text, rendered later with chosen whitespace and escapes. */
type Tree = { n: string } | { s: string } | boolean | null | { a: Tree[] } | { o: [string, Tree][] };

const tree: fc.Arbitrary<Tree> = fc.letrec<{ tree: Tree }>((tie) => ({
  tree: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    numberText.map((n) => ({ n })),
    anyText.map((s) => ({ s })),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('tree'), { maxLength: 5 }).map((a) => ({ a })),
    fc.array(fc.tuple(anyText, tie('tree')), { maxLength: 6 }).map((o) => ({ o })),
  ),
})).tree;

const whitespace = fc.constantFrom('', '', ' ', '\n', '\r\n  ', '\t');

interface Style {
  ws: string;
  /** Escape every non-ASCII character (\\uXXXX) and every `/`. */
  escapeAll: boolean;
}

function renderString(s: string, style: Style): string {
  const json = JSON.stringify(s);
  if (!style.escapeAll) return json;
  return json.replace(/[^\x20-\x7e]|\//g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function render(t: Tree, style: Style): string {
  const w = style.ws;
  if (t === null) return 'null';
  if (typeof t === 'boolean') return String(t);
  if ('n' in t) return t.n;
  if ('s' in t) return renderString(t.s, style);
  if ('a' in t) return `[${w}${t.a.map((x) => render(x, style)).join(`${w},${w}`)}${w}]`;
  return `{${w}${t.o.map(([k, v]) => `${renderString(k, style)}${w}:${w}${render(v, style)}`).join(`,${w}`)}${w}}`;
}

const TRIGGERS = [
  'UserAdded',
  'UserDeleted',
  'AccountUpdated',
  'DocumentAdded',
  'ToDoDone',
  'EnergySwitchAdded',
  'EnergySwitchUpdated',
  'EnergySwitchDeleted',
  'PaymentAdded',
  'Ping',
];

/** A body shaped like a delivery, with a record of generated fields (EnergySwitch fields among them). */
const deliveryBody = fc
  .record({
    id: fc.oneof(fc.constant('wh_1'), anyText),
    trigger: fc.constantFrom(...TRIGGERS),
    date: fc.constantFrom(
      '2026-11-22T09:00:00Z',
      '2026-11-22T09:00:00.123456+01:00',
      '2026-11-22T09:00:00',
      '2026-02-30T00:00:00Z',
      'yesterday',
    ),
    typename: fc.constantFrom('EnergySwitch', 'User', 'OperationFailure', 'Payment', ''),
    entityId: fc.oneof(
      anyText.map((s) => ({ s }) as Tree),
      numberText.map((n) => ({ n }) as Tree),
    ),
    fields: fc.array(fc.tuple(anyText, tree), { maxLength: 6 }),
    energy: fc.record({
      amount: numberText,
      fuels: numberText,
      status: anyText,
      statusDate: fc.constantFrom('2026-11-22T09:00:00Z', '2026-11-22', 'x'),
    }),
    variables: fc.option(fc.array(fc.tuple(anyText, tree), { maxLength: 3 })),
    errors: fc.option(fc.array(tree, { maxLength: 2 })),
    padding: fc.option(fc.string({ minLength: 2048, maxLength: 3000 })),
    shuffle: fc.boolean(),
    ws: whitespace,
    escapeAll: fc.boolean(),
  })
  .map((b) => {
    const record: [string, Tree][] = [['__typename', { s: b.typename }], ['id', b.entityId], ...b.fields];
    if (b.typename === 'EnergySwitch') {
      record.push(
        [
          'savings',
          {
            o: [
              ['currency', { s: 'GBP' }],
              ['amount', { n: b.energy.amount }],
            ],
          },
        ],
        [
          'commission',
          {
            o: [
              ['status', { s: b.energy.status }],
              ['statusDate', { s: b.energy.statusDate }],
              ['fuelsWithCommissionExpected', { n: b.energy.fuels }],
            ],
          },
        ],
      );
    }
    if (b.padding !== null) record.push(['notes', { s: b.padding }]);
    const top: [string, Tree][] = [
      [
        'webhook',
        {
          o: [
            ['id', { s: b.id }],
            ['trigger', { s: b.trigger }],
            ['date', { s: b.date }],
          ],
        },
      ],
      ['query', { o: b.variables === null ? [] : [['variables', { o: b.variables }]] }],
      ['data', { o: [['getThing', { o: b.shuffle ? [...record].reverse() : record }]] }],
    ];
    if (b.errors !== null) top.push(['errors', { a: b.errors }]);
    return render({ o: b.shuffle ? [...top].reverse() : top }, { ws: b.ws, escapeAll: b.escapeAll });
  });

/** Ways a body goes wrong: cut short, a character dropped or added, a key given twice, a BOM, bad bytes. */
const damaged = fc
  .tuple(deliveryBody, fc.nat(), fc.constantFrom('cut', 'drop', 'insert', 'duplicate', 'bom', 'bytes'))
  .map(([text, at, how]): Buffer => {
    const p = text.length === 0 ? 0 : at % text.length;
    const bytes = Buffer.from(text, 'utf8');
    switch (how) {
      case 'cut':
        return Buffer.from(text.slice(0, p));
      case 'drop':
        return Buffer.from(text.slice(0, p) + text.slice(p + 1));
      case 'insert':
        return Buffer.from(`${text.slice(0, p)}${'",:{}[]0-e \\u'[at % 15]}${text.slice(p)}`);
      case 'duplicate':
        return Buffer.from(text.replace('"webhook"', '"data":null,"webhook"'));
      case 'bom':
        return Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), bytes]);
      default:
        return Buffer.concat([bytes.subarray(0, p % (bytes.length + 1)), Buffer.from([0xc3, 0x28])]);
    }
  });

// Received an hour after the generated webhook.date: inside WEBHOOK_MAX_AGE, so routing goes all the way.
const envelopeOf = (body: Buffer): RawEnvelope => ({
  ...envelopeFor('{}'),
  webhookId: 'wh_1',
  receivedAt: Date.parse('2026-11-22T10:00:00Z'),
  body,
});

/** How many decisions of each kind (and dead-letter reason) the generated bodies reached. */
const reached = new Map<string, number>();

describe('the fast body parse routes as lossless-json does', () => {
  it('every fixture body: the same outputs, byte for byte', () => {
    const bodies = readdirSync(FIXTURES_DIR).filter((f) => f.endsWith('.body'));
    expect(bodies.length).toBeGreaterThan(20);
    let fast = 0;
    for (const file of bodies) {
      const body = readFileSync(path.join(FIXTURES_DIR, file));
      if (expectSameParse(body.toString('utf8')) === 'fast') fast++;
      for (const id of [
        'wh_1',
        (() => {
          try {
            return JSON.parse(body.toString('utf8')).webhook.id as string;
          } catch {
            return 'none';
          }
        })(),
      ])
        expectSameRoute({ ...envelopeOf(body), webhookId: id ?? 'none' });
    }
    // The fast parse takes on every fixture that is JSON (one is not).
    expect(fast).toBe(bodies.length - 1);
  });

  it('generated deliveries: the same outputs, and the fast parse takes most of them', () => {
    let fast = 0;
    let runs = 0;
    fc.assert(
      fc.property(deliveryBody, (text) => {
        runs++;
        if (expectSameParse(text) === 'fast') fast++;
        expectSameRoute(envelopeOf(Buffer.from(text, 'utf8')));
      }),
      { numRuns: 2000 },
    );
    // Routed to every entity stream, failures and the commission stream, not only dead-lettered.
    const kinds = [...reached.keys()].join('\n');
    for (const topic of [
      'entity.user',
      'entity.other',
      'entity.energy-switch-commission',
      'webhooks.failures',
    ])
      expect(kinds).toContain(topic);
    // The rest have a key given twice or a key `__proto__` (the generated keys often do): lossless-json's.
    expect(fast / runs).toBeGreaterThan(0.4);
  }, 60_000);

  it('damaged deliveries: the same outputs and dead-letter reasons', () => {
    fc.assert(
      fc.property(damaged, (body) => {
        expectSameParse(body.toString('utf8'));
        expectSameRoute(envelopeOf(body));
      }),
      { numRuns: 1000 },
    );
  }, 60_000);

  it('any JSON text: the same value, or left to lossless-json', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.json(),
          fc.tuple(tree, whitespace, fc.boolean()).map(([t, ws, escapeAll]) => render(t, { ws, escapeAll })),
        ),
        (text) => {
          expectSameParse(text);
        },
      ),
      { numRuns: 2000 },
    );
  }, 60_000);
});
