// A body nested deeper than MAX_JSON_DEPTH is refused alike by route() (`body-not-json`, never a throw:
// every reader after the byte scans recurses once a level) and by the fast path's scan (it gives up, so
// route() decides); at the limit both route it to the same bytes, and the tables stage reads its event.
import { describe, expect, it } from 'vitest';
import { scanDelivery } from '../../../../processors/dedupe-router/delivery-scan.js';
import type { EntityEvent } from '../../../../processors/dedupe-router/entity-event.js';
import { routeFast } from '../../../../processors/dedupe-router/fast-route.js';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../../../../processors/dedupe-router/json-bytes.js';
import { parseBody } from '../../../../processors/dedupe-router/parse-body.js';
import { route } from '../../../../processors/dedupe-router/route.js';
import { applyEvent, tableFields } from '../../../../processors/tables/merge.js';
import type { RawEnvelope } from '../../../../schemas/raw-envelope.js';
import { written } from './written-decision.js';

type Shape = 'objects' | 'arrays' | 'mixed';

/** A value nesting `levels` arrays and objects (levels ≥ 1). */
function nested(shape: Shape, levels: number): string {
  if (shape === 'arrays') return '['.repeat(levels) + ']'.repeat(levels);
  if (shape === 'objects') return `${'{"a":'.repeat(levels - 1)}{"b":"v"}${'}'.repeat(levels - 1)}`;
  const pairs = Math.floor(levels / 2);
  const odd = levels % 2 === 1 ? '[]' : 'null';
  return `${'{"a":['.repeat(pairs)}${odd}${']}'.repeat(pairs)}`;
}

/** A User delivery whose body nests `depth` levels in all: body, data and record (3), then `x`. */
function deliveryAt(shape: Shape, depth: number): RawEnvelope {
  const body =
    '{"webhook":{"id":"wh_deep","trigger":"UserAdded","date":"2026-11-20T10:00:00Z"},' +
    '"query":{"api":"https://api.platform.example/v1/graphql","query":"q","variables":{"id":"u1"}},' +
    `"data":{"getUser":{"__typename":"User","id":"u1","x":${nested(shape, depth - 3)}}}}`;
  return {
    webhookId: 'wh_deep',
    source: 'platform',
    trigger: 'UserAdded',
    webhookDate: '2026-11-20T10:00:00Z',
    receivedAt: Date.parse('2026-11-20T10:00:05Z'),
    body: Buffer.from(body),
    headers: {},
    query: null,
    verifiedKeyId: 'k1',
    ingestId: 'ing-1',
  };
}

const SHAPES: Shape[] = ['objects', 'arrays', 'mixed'];
const TOO_DEEP = `the body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`;

describe('nesting depth', () => {
  it('the limit is the one this test was measured at', () => {
    // The whole route (lossless-json's parse and stringify, field paths) and the tables stage's merge of
    // its event ran cold at over 2,500 levels in Node's default stack, and at 512 with a 300 KB stack.
    expect(MAX_JSON_DEPTH).toBe(512);
  });

  it.each(SHAPES)('%s at the limit: both paths route it, to the same bytes', (shape) => {
    const envelope = deliveryAt(shape, MAX_JSON_DEPTH);
    expect(nestsDeeperThan(envelope.body, MAX_JSON_DEPTH)).toBe(false);
    expect(nestsDeeperThan(envelope.body, MAX_JSON_DEPTH - 1)).toBe(true);
    const decision = route(envelope);
    expect(decision.kind).toBe('routed');
    const fast = routeFast(envelope);
    expect(fast).toBeDefined();
    expect(written(fast!)).toEqual(written(decision));
  });

  it.each(
    SHAPES.flatMap((shape) => [
      [shape, MAX_JSON_DEPTH + 1],
      [shape, 10_000],
    ]) as [Shape, number][],
  )(
    '%s at %i levels: dead-lettered body-not-json by route(), left to it by the fast path',
    (shape, depth) => {
      const envelope = deliveryAt(shape, depth);
      let decision: ReturnType<typeof route> | undefined;
      expect(() => {
        decision = route(envelope);
      }).not.toThrow();
      expect(decision!.kind).toBe('dead-lettered');
      expect(decision!.reason).toBe('body-not-json');
      const dlq = decision!.outputs[1]!;
      expect(dlq.topic).toBe('webhooks.dlq');
      expect((dlq.value as { message: string }).message).toContain(TOO_DEEP);
      expect(routeFast(envelope)).toBeUndefined();
      expect(scanDelivery(envelope.body)).toBeUndefined();
    },
  );

  it('decides a 10,000-level body the same every time', () => {
    const envelope = deliveryAt('objects', 10_000);
    const first = written(route(envelope));
    for (let k = 0; k < 5; k++) {
      expect(written(route(envelope))).toEqual(first);
      expect(routeFast(envelope)).toBeUndefined();
    }
  });

  it('parseBody refuses a top-level array or object deeper than the limit, even an empty one inside', () => {
    const deep = (open: string, close: string, levels: number) =>
      Buffer.from(open.repeat(levels) + close.repeat(levels));
    expect(parseBody(deep('[', ']', MAX_JSON_DEPTH + 1))).toEqual({
      ok: false,
      reason: 'body-not-json',
      message: `${TOO_DEEP}, the most read (MAX_JSON_DEPTH)`,
    });
    expect(parseBody(deep('[', ']', MAX_JSON_DEPTH))).toMatchObject({ ok: false, reason: 'body-not-object' });
    const atLimit = `{"a":${'['.repeat(MAX_JSON_DEPTH - 1)}${']'.repeat(MAX_JSON_DEPTH - 1)}}`;
    expect(parseBody(Buffer.from(atLimit)).ok).toBe(true);
    const overLimit = `{"a":${'['.repeat(MAX_JSON_DEPTH)}${']'.repeat(MAX_JSON_DEPTH)}}`;
    expect(parseBody(Buffer.from(overLimit))).toMatchObject({ ok: false, reason: 'body-not-json' });
  });

  it('brackets inside strings do not count, escaped quotes included', () => {
    const text = `{"s":"${'['.repeat(10_000)}\\"${'{'.repeat(10_000)}","t":"\\\\"}`;
    expect(nestsDeeperThan(Buffer.from(text), MAX_JSON_DEPTH)).toBe(false);
    expect(nestsDeeperThan(Buffer.from(text), 1)).toBe(false);
    expect(nestsDeeperThan(Buffer.from('{"a":{}}'), 1)).toBe(true);
    expect(parseBody(Buffer.from(text)).ok).toBe(true);
    // Bytes that are not JSON: measured as far as they read as its structure, whatever follows.
    expect(nestsDeeperThan(Buffer.from('['.repeat(MAX_JSON_DEPTH + 1)), MAX_JSON_DEPTH)).toBe(true);
    expect(parseBody(Buffer.from(`"${'['.repeat(MAX_JSON_DEPTH + 1)}`))).toMatchObject({
      ok: false,
      reason: 'body-not-json',
    });
  });

  it.each(SHAPES)('%s at the limit: the tables stage merges its event, fast read and tree alike', (shape) => {
    const decision = route(deliveryAt(shape, MAX_JSON_DEPTH));
    const event = decision.outputs[1]!.value as EntityEvent;
    const merge = (data: string, fields: readonly string[]) =>
      tableFields(
        applyEvent(undefined, {
          webhookId: event.webhookId,
          entity: event.entity,
          deleted: false,
          occurredAt: event.occurredAt,
          fields,
          data,
        }).state,
      );
    const table = merge(event.data, event.fields);
    expect(table).toMatchObject({ id: 'u1' });
    const x = nested(shape, MAX_JSON_DEPTH - 3);
    const deepest = event.fields.find((f) => f.startsWith('x'))!;
    if (shape === 'objects') {
      expect(deepest.split('.')).toHaveLength(MAX_JSON_DEPTH - 2);
      expect(table![deepest]).toBe('v');
    } else if (shape === 'arrays') expect(table!.x).toBe(x);
    else expect(table!['x.a']).toBe(x.slice('{"a":'.length, -1));
    // A dotted key: the fast read gives up and lossless-json's tree and flattenFields read the data.
    const dotted = event.data.replace('"id":"u1"', '"id":"u1","p.q":1');
    expect(merge(dotted, [...event.fields, 'p.q'])).toEqual({ ...table, 'p.q': '1' });
  });
});
