// The dedupe state of one raw partition: (source, webhook id) → decision, held in an IdSet of 128-bit
// hashes and logged to webhooks.dedupe-changelog (key `<source>/<webhook.id>`, 10-byte decision value).

import { isUtf8 } from 'node:buffer';
import { digestId, digestIdBytes, IdSet } from '../../runtime/streams/id-set.js';
import { type IdStore, LmdbIdSet } from '../../runtime/streams/lmdb-id-set.js';
import type { TaskStateDir } from '../../runtime/streams/state-dir.js';
import {
  ChangelogKeyValueStore,
  type ChangelogRecord,
  type KeyValueBacking,
} from '../../runtime/streams/store.js';
import {
  DECISION_TAGS,
  DEDUPE_DECISION_BYTES,
  DEDUPE_DECISION_VERSION,
  type DedupeDecision,
  decisionOfTag,
  decodeDedupeDecision,
  encodeDedupeDecision,
} from './dedupe-decision.js';

export const DEDUPE_STORE = 'dedupe';

/**
 * An id set as a key-value backing: a decision is its tag, its time the second it was seen. In memory
 * (IdSet) by default, on disk (LmdbIdSet) over a task's state directory.
 */
export class IdSetBacking implements KeyValueBacking<DedupeDecision> {
  /**
   * The ids looked up since the last commit or rollback, with their hash: a first delivery is looked up
   * when it arrives and set when its transaction commits, and is hashed once for both.
   */
  readonly #hashed = new Map<string, string>();

  /** Present when the id set writes asynchronously (on disk). */
  readonly flushAsync?: () => void;

  constructor(readonly ids: IdStore = new IdSet()) {
    if (ids.flushAsync !== undefined) this.flushAsync = () => ids.flushAsync!();
  }

  /** The backing of a task: on disk when it has a state directory. */
  static of(stateDir: TaskStateDir | undefined): IdSetBacking {
    return new IdSetBacking(stateDir === undefined ? new IdSet() : new LmdbIdSet(stateDir, DEDUPE_STORE));
  }

  get(key: string): DedupeDecision | undefined {
    let hashed = this.#hashed.get(key);
    if (hashed === undefined) {
      hashed = digestId(key);
      this.#hashed.set(key, hashed);
    }
    const entry = this.ids.getHashed(hashed);
    if (entry === undefined) return undefined;
    return { kind: decisionOfTag(entry.tag)!, seenAt: entry.seenAt };
  }

  set(key: string, value: DedupeDecision): void {
    this.ids.setHashed(this.#hashed.get(key) ?? digestId(key), value.seenAt, DECISION_TAGS[value.kind]);
  }

  /** The transaction ended: its lookups' hashes go (they are kept for one transaction only). */
  forgetLookups(): void {
    this.#hashed.clear();
  }

  delete(key: string): void {
    this.ids.delete(key);
  }

  get size(): number {
    return this.ids.size;
  }

  flush(): void {
    this.ids.flush?.();
  }
}

/** A decision's time read in place: int64 big-endian epoch ms, rounded as Number(readBigInt64BE) rounds. */
function seenAtOf(value: Buffer): number {
  return value.readInt32BE(2) * 2 ** 32 + value.readUInt32BE(6);
}

/**
 * The dedupe store: restores every decision, then forgets those older than the window by stream time.
 *
 * Its changelog is `compact,delete` with retention = window + margin, and the broker deletes by record
 * timestamp: so a changelog record is stamped with the time it is written, not its decision's time (the
 * raw record's). Stamped with the decision's time, the decisions a router makes while catching up on
 * old records (a lag of days, a new topic set started on copied history: docs/scaling.md) were deleted
 * as soon as their segment rolled, and a restore then (a rebalance, a restart) forgot ids still inside
 * the window: their retries were routed again. The decision's time, in the value, is the stream time a
 * restore reads (eventTimeOf).
 */
export class DedupeStore extends ChangelogKeyValueStore<DedupeDecision> {
  constructor(
    readonly windowMs: number,
    readonly ids: IdSetBacking = new IdSetBacking(),
    private readonly now: () => number = Date.now,
  ) {
    super(DEDUPE_STORE, ids, { encode: encodeDedupeDecision, decode: decodeDedupeDecision });
  }

  /** Writes the decision; its changelog record is stamped with now (see the class). */
  override put(key: string, value: DedupeDecision, _timestamp?: number): void {
    super.put(key, value, this.now());
  }

  /** A decision's own time (its value's), or the record's timestamp for anything it cannot read. */
  eventTimeOf(record: ChangelogRecord): number {
    const { value } = record;
    if (value !== null && value.length === DEDUPE_DECISION_BYTES && value[0] === DEDUPE_DECISION_VERSION)
      return seenAtOf(value);
    return record.timestamp;
  }

  /**
   * One changelog record while restoring. From the key's bytes (as read), no object is built: the key's
   * bytes are hashed as they are and the decision's tag and time read in place, exactly what decoding
   * the key and the decision and then set() would store. Anything else (no key bytes, a deletion, key
   * bytes that are not valid UTF-8, a value this version cannot read) takes the decoding path, which
   * also refuses what it cannot read.
   */
  override restore(record: ChangelogRecord): void {
    const { keyBytes, value } = record;
    if (
      keyBytes !== undefined &&
      keyBytes !== null &&
      value !== null &&
      value.length === DEDUPE_DECISION_BYTES &&
      value[0] === DEDUPE_DECISION_VERSION &&
      decisionOfTag(value[1]!) !== undefined &&
      isUtf8(keyBytes)
    ) {
      this.ids.ids.setHashed(digestIdBytes(keyBytes), seenAtOf(value), value[1]!);
      return;
    }
    super.restore(record);
  }

  override commit(): void {
    super.commit();
    this.ids.forgetLookups();
  }

  override rollback(): void {
    super.rollback();
    this.ids.forgetLookups();
  }

  /**
   * The changelog was read to its end: the restored ids reach the disk (a store on disk; a standby writes
   * its checkpoint right after, so they must be there), then those older than the window at the restored
   * stream time are forgotten. Expiry alone (a punctuation) leaves waiting ids for the next checkpoint.
   */
  override restored(streamTime: number): void {
    this.flush();
    this.expire(streamTime);
  }

  /** Forgets ids seen before `streamTime − window`; returns how many. */
  expire(streamTime: number): number {
    return this.ids.ids.expireBefore(streamTime - this.windowMs);
  }

  /** The decision for an id still inside the window at `streamTime`, if any. */
  recent(key: string, streamTime: number): DedupeDecision | undefined {
    const found = this.get(key);
    // Expiry runs in punctuations; between two, an id already past the window must not count. Ids are
    // kept to the second (id-set.ts): as expiry does, an id counts until its whole second is past the
    // window, never forgotten early (before, an id seen at .900 of a second was up to 0.9 s early).
    return found !== undefined && found.seenAt + 1_000 > streamTime - this.windowMs ? found : undefined;
  }
}
