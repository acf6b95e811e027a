// A compacted topic read as the table it stands for: the last record of each key, a tombstone removing
// the key, as log compaction would leave it once it had caught up with every record.
import type { ReadRecord } from '../../runtime/kafka/read-to-end.js';

export class LatestByKey {
  /**
   * By partition and key: compaction works per partition, so a key written to two partitions (a
   * producer that partitioned it differently) keeps a row in each rather than a guess at which is newer.
   */
  private readonly rows = new Map<string, ReadRecord>();
  /** Records without a key cannot be compacted (a compacted topic refuses them): each stays a row of its own. */
  private readonly keyless: ReadRecord[] = [];

  /** Takes the next record of its partition, in offset order. */
  apply(record: ReadRecord): void {
    if (record.key === null) {
      if (record.value !== null) this.keyless.push(kept(record));
      return;
    }
    const id = `${record.partition}/${record.key.toString('base64')}`;
    if (record.value === null) this.rows.delete(id);
    else this.rows.set(id, kept(record));
  }

  /** The live rows, in log order: by partition, then offset. */
  latest(): ReadRecord[] {
    return [...this.rows.values(), ...this.keyless].sort((a, b) =>
      a.partition !== b.partition ? a.partition - b.partition : a.offset < b.offset ? -1 : 1,
    );
  }

  get size(): number {
    return this.rows.size + this.keyless.length;
  }
}

/**
 * The record with a key and value of its own: the client hands a batch's keys and values over as slices
 * of one block of memory (tools/build/kafka-javascript-*.patch), and a row kept from each batch would
 * keep every batch's block, the whole topic, alive.
 */
function kept(record: ReadRecord): ReadRecord {
  return {
    ...record,
    key: record.key === null ? null : Buffer.from(record.key),
    value: record.value === null ? null : Buffer.from(record.value),
  };
}
