import { describe, expect, it } from 'vitest';
import type { EntityState } from '../../../../processors/tables/merge.js';
import { MergeStore } from '../../../../processors/tables/merge-store.js';
import { useTempStateDirs } from '../../../helpers/temp-state-dir.js';

const dirs = useTempStateDirs();
const DAY = 86_400_000;
const T0 = Date.parse('2026-11-01T00:00:00Z');

const deletedAt = (at: number): EntityState => ({
  deletedAt: { at, webhookId: `wh_${at}` },
  seenAt: null,
  fields: {},
});
const alive = (at: number): EntityState => ({
  deletedAt: null,
  seenAt: { at, webhookId: `wh_${at}` },
  fields: { id: [{ value: 'x', version: { at, webhookId: `wh_${at}` }, orderAt: null }] } as never,
});

describe.each([
  ['in memory', () => new MergeStore(7 * DAY)],
  ['on disk (LMDB)', () => new MergeStore(7 * DAY, dirs.open())],
])('the merge store %s', (_kind, create) => {
  it('keeps deletion markers for good, and forgets only a state that holds nothing, as a tombstone', () => {
    const store = create();
    store.put('old-deletion', deletedAt(T0), T0);
    store.put('alive', alive(T0), T0);
    store.put('empty', { deletedAt: null, seenAt: null, fields: {} }, T0);
    store.commit();
    const now = T0 + 400 * DAY;
    expect(store.forgetBefore(now)).toBe(1);
    expect(store.takeChangelog()).toEqual([{ key: 'empty', value: null, timestamp: now }]);
    store.commit();
    expect(store.get('old-deletion')).toEqual(deletedAt(T0));
    expect(store.get('alive')).toEqual(alive(T0));
    expect(store.size).toBe(2);
    expect(store.forgetBefore(now)).toBe(0);
  });

  it('keeps an entity added again after its deletion', () => {
    const store = create();
    store.put('k', deletedAt(T0), T0);
    store.commit();
    store.put('k', alive(T0 + DAY), T0 + DAY);
    store.commit();
    expect(store.forgetBefore(T0 + 30 * DAY)).toBe(0);
    expect(store.get('k')).toEqual(alive(T0 + DAY));
  });
});

describe('the merge store on disk', () => {
  it('finds what to forget in its time index, without reading the other states', () => {
    const store = new MergeStore(7 * DAY, dirs.open());
    for (let i = 0; i < 1_000; i++) store.put(`alive-${i}`, alive(T0), T0);
    for (let i = 0; i < 10; i++) store.put(`deleted-${i}`, deletedAt(T0 + i * DAY), T0);
    for (let i = 0; i < 3; i++) store.put(`empty-${i}`, { deletedAt: null, seenAt: null, fields: {} }, T0);
    store.commit();
    const state = store.state as { dueBefore(before: number): string[] };
    expect(state.dueBefore(T0 + 30 * DAY).sort()).toEqual(['empty-0', 'empty-1', 'empty-2']);
    expect(store.forgetBefore(T0 + 30 * DAY)).toBe(3);
  });
});
