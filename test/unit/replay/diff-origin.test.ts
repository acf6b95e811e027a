import { describe, expect, it } from 'vitest';
import { keysByRange, originOf, withinOrigins } from '../../../tools/replay/diff.js';

describe('where a live record came from', () => {
  it('is its source, webhook id and ingest id', () => {
    const a = originOf({ source: 'energy', webhookId: 'w1', ingestId: 'i1', trigger: 'UserAdded' });
    expect(a).toBe(originOf({ source: 'energy', webhookId: 'w1', ingestId: 'i1' }));
    expect(a).not.toBe(originOf({ source: 'energy', webhookId: 'w1', ingestId: 'i2' }));
  });

  it('is the raw position of a dead letter of a record that was no envelope', () => {
    const byMessage = originOf({
      source: '',
      webhookId: 'some-key',
      ingestId: '',
      message: 'the raw record at p.webhooks.raw/2/17 is not a raw envelope: unknown schema id',
    });
    const byId = originOf({
      source: '',
      webhookId: 'offset:p.webhooks.raw/2/17',
      ingestId: '',
      message: 'processor-error: boom',
    });
    expect(byMessage).toBeDefined();
    expect(byId).toBe(byMessage);
  });

  it('is unknown for anything else', () => {
    expect(originOf(null)).toBeUndefined();
    expect(originOf({ webhookId: 'w1', fields: {} })).toBeUndefined();
  });
});

describe('which live records the diff keeps as it reads them', () => {
  const origins = new Set([originOf({ source: 'energy', webhookId: 'w1', ingestId: 'i1' })!]);
  const at = (key: string, value: unknown, offset = 0n) => ({ key, value, partition: 0, offset });

  it('keeps a router output record derived within the range, drops the rest, and notes each key', () => {
    const seen = { inside: new Set<string>(), outside: new Set<string>() };
    const keep = withinOrigins(origins, seen);
    expect(keep(at('u1', { source: 'energy', webhookId: 'w1', ingestId: 'i1' }))).toBe(true);
    expect(keep(at('u2', { source: 'energy', webhookId: 'w0', ingestId: 'i0' }))).toBe(false);
    // No origin to tell: kept, so that a difference is shown rather than hidden.
    expect(keep(at('u3', { fields: {} }))).toBe(true);
    expect([...seen.inside]).toEqual(['u1', 'u3']);
    expect([...seen.outside]).toEqual(['u2']);
  });

  it('keeps no entity record read for its keys, and notes each on its side of the range', () => {
    const seen = { inside: new Set<string>(), outside: new Set<string>() };
    const keep = keysByRange([{ partition: 0, start: 5n, end: 7n }], seen);
    expect([4n, 5n, 6n, 7n].map((o) => keep(at(`k${o}`, {}, o)))).toEqual([false, false, false, false]);
    expect([...seen.inside]).toEqual(['k5', 'k6']);
    expect([...seen.outside]).toEqual(['k4', 'k7']);
  });
});
