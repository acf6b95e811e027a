import { describe, expect, it } from 'vitest';
import { encodeCheckpoint, parseCheckpoint, restoreStart } from '../../../runtime/streams/checkpoint.js';

const bounds = { low: 100n, high: 500n };

describe('where a store on disk restores from', () => {
  it('from its checkpoint when the changelog holds everything after it', () => {
    expect(restoreStart(300n, bounds, undefined)).toEqual({ kind: 'tail', from: 300n });
    expect(restoreStart(100n, bounds, undefined)).toEqual({ kind: 'tail', from: 100n });
  });

  it('a checkpoint at the end restores nothing (a clean restart)', () => {
    expect(restoreStart(500n, bounds, undefined)).toEqual({ kind: 'tail', from: 500n });
  });

  it('in full when the checkpoint is past the end (the changelog was recreated)', () => {
    const start = restoreStart(501n, bounds, undefined);
    expect(start.kind).toBe('full');
    expect(start.kind === 'full' && start.reason).toMatch(/past the changelog's end 500/);
  });

  it('in full when records after the checkpoint were deleted', () => {
    const start = restoreStart(99n, bounds, undefined);
    expect(start.kind === 'full' && start.reason).toMatch(/before the changelog's first offset 100/);
  });

  it('in full without a checkpoint, saying why only when there should have been one', () => {
    expect(restoreStart(undefined, bounds, undefined)).toEqual({ kind: 'full', reason: undefined });
    expect(restoreStart(undefined, bounds, 'no offset')).toEqual({ kind: 'full', reason: 'no offset' });
  });
});

describe('a stored checkpoint', () => {
  it('reads back what was written', () => {
    const checkpoint = { offsets: { 'webhooks.dedupe-changelog': '1234' }, streamTime: 1_700_000_000_000 };
    expect(parseCheckpoint(encodeCheckpoint(checkpoint))).toEqual(checkpoint);
  });

  it('is refused when it is not one (the store then counts as corrupt)', () => {
    for (const bytes of ['', '{', 'null', '{"offsets":{"t":"-1"},"streamTime":0}', '{"offsets":{}}', '[1]'])
      expect(parseCheckpoint(Buffer.from(bytes)), bytes).toBeUndefined();
    expect(parseCheckpoint(undefined)).toBeUndefined();
  });
});
