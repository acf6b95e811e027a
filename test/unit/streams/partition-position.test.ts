import { describe, expect, it } from 'vitest';
import { PartitionPosition } from '../../../runtime/streams/partition-position.js';

describe('a partition position', () => {
  it('goes back to the committed offset after an abort, not to the first record it processed', () => {
    const position = new PartitionPosition();
    position.start(10);
    for (const offset of [10, 11, 12]) position.handedOver(offset);
    position.processed(10);
    position.committedNow();
    position.processed(11);
    expect(position.toCommit).toBe(12);
    expect(position.rewind()).toBe(11);
    expect(position.dirty).toBe(false);
    expect(position.records).toBe(0);
  });

  it('goes back to the committed offset even when the transaction held nothing of it (the failing record was its first)', () => {
    const position = new PartitionPosition();
    position.start(5);
    position.handedOver(5);
    position.handedOver(6);
    expect(position.dirty).toBe(false);
    expect(position.rewind()).toBe(5);
  });

  it('without a committed offset, goes back to the first record ever handed over', () => {
    const position = new PartitionPosition();
    position.start(undefined);
    position.handedOver(0);
    position.handedOver(1);
    position.processed(0);
    expect(position.rewind()).toBe(0);
    position.processed(0);
    position.processed(1);
    position.committedNow();
    position.handedOver(2);
    expect(position.rewind()).toBe(2);
  });

  it('has nowhere to go back to before anything was handed over', () => {
    expect(new PartitionPosition().rewind()).toBeUndefined();
  });

  it('drops copies of records below what is processed or committed', () => {
    const position = new PartitionPosition();
    position.start(3);
    expect(position.isNew(2)).toBe(false);
    expect(position.isNew(3)).toBe(true);
    position.processed(3);
    position.processed(4);
    expect(position.isNew(4)).toBe(false);
    expect(position.isNew(5)).toBe(true);
    expect(new PartitionPosition().isNew(0)).toBe(true);
  });

  it('reads on after what is processed, then from the committed offset', () => {
    const position = new PartitionPosition();
    position.start(3);
    expect(position.readNext()).toBe(3);
    position.processed(3);
    expect(position.readNext()).toBe(4);
    position.rewind();
    expect(position.readNext()).toBe(3);
  });

  it('follows the consumer past transaction markers, never behind what it processed or committed', () => {
    const position = new PartitionPosition();
    position.start(3);
    position.processed(3);
    position.advanceTo(5);
    expect(position.toCommit).toBe(5);
    position.advanceTo(4);
    expect(position.toCommit).toBe(5);
    position.committedNow();
    expect(position.committed).toBe(5);
    expect(position.canAdvanceTo(5)).toBe(false);
    expect(position.canAdvanceTo(7)).toBe(true);
  });

  it("never moves on from the group's start offset alone (the seek to it may not have taken effect yet)", () => {
    const position = new PartitionPosition();
    expect(position.canAdvanceTo(4)).toBe(false);
    position.start(3);
    expect(position.canAdvanceTo(9)).toBe(false);
  });
});
