import { describe, expect, it } from 'vitest';
import { PartitionPosition } from '../../../runtime/streams/partition-position.js';

describe('a partition position', () => {
  it('goes back to the committed offset after an abort, not to the first record it processed', () => {
    const position = new PartitionPosition();
    position.start(10n);
    for (const offset of [10n, 11n, 12n]) position.handedOver(offset);
    position.processed(10n);
    position.committedNow();
    position.processed(11n);
    expect(position.toCommit).toBe(12n);
    expect(position.rewind()).toBe(11n);
    expect(position.dirty).toBe(false);
    expect(position.records).toBe(0);
  });

  it('goes back to the committed offset even when the transaction held nothing of it (the failing record was its first)', () => {
    const position = new PartitionPosition();
    position.start(5n);
    position.handedOver(5n);
    position.handedOver(6n);
    expect(position.dirty).toBe(false);
    expect(position.rewind()).toBe(5n);
  });

  it('without a committed offset, goes back to the first record ever handed over', () => {
    const position = new PartitionPosition();
    position.start(undefined);
    position.handedOver(0n);
    position.handedOver(1n);
    position.processed(0n);
    expect(position.rewind()).toBe(0n);
    position.processed(0n);
    position.processed(1n);
    position.committedNow();
    position.handedOver(2n);
    expect(position.rewind()).toBe(2n);
  });

  it('has nowhere to go back to before anything was handed over', () => {
    expect(new PartitionPosition().rewind()).toBeUndefined();
  });

  it('drops copies of records below what is processed or committed', () => {
    const position = new PartitionPosition();
    position.start(3n);
    expect(position.isNew(2n)).toBe(false);
    expect(position.isNew(3n)).toBe(true);
    position.processed(3n);
    position.processed(4n);
    expect(position.isNew(4n)).toBe(false);
    expect(position.isNew(5n)).toBe(true);
    expect(new PartitionPosition().isNew(0n)).toBe(true);
  });

  it('reads on after what is processed, then from the committed offset', () => {
    const position = new PartitionPosition();
    position.start(3n);
    expect(position.readNext()).toBe(3n);
    position.processed(3n);
    expect(position.readNext()).toBe(4n);
    position.rewind();
    expect(position.readNext()).toBe(3n);
  });

  it('follows the consumer past transaction markers, never behind what it processed or committed', () => {
    const position = new PartitionPosition();
    position.start(3n);
    position.processed(3n);
    position.advanceTo(5n);
    expect(position.toCommit).toBe(5n);
    position.advanceTo(4n);
    expect(position.toCommit).toBe(5n);
    position.committedNow();
    expect(position.committed).toBe(5n);
    expect(position.canAdvanceTo(5n)).toBe(false);
    expect(position.canAdvanceTo(7n)).toBe(true);
  });

  it("never moves on from the group's start offset alone (the seek to it may not have taken effect yet)", () => {
    const position = new PartitionPosition();
    expect(position.canAdvanceTo(4n)).toBe(false);
    position.start(3n);
    expect(position.canAdvanceTo(9n)).toBe(false);
  });
});
