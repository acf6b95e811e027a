// The value of a `webhooks.dedupe-changelog` record (key `<source>/<webhook.id>`): which decision
// the router took for an id and the stream time it saw it at, in a fixed 10-byte binary form.
//
// Not Avro: the changelog is the router's private state, read back only by the router's restore
// (as Kafka Streams' own changelogs are), restore must not wait on the schema registry, and a
// fixed layout restores millions of records without a decoder per record. The leading version
// byte leaves room to change the layout: a reader refuses versions it does not know.
import type { DecisionKind } from './route.js';

export interface DedupeDecision {
  readonly kind: DecisionKind;
  /** The raw record's timestamp (stream time), epoch ms. */
  readonly seenAt: number;
}

/** Byte 0: this version. Byte 1: the decision. Bytes 2–9: seenAt, int64 big-endian epoch ms. */
export const DEDUPE_DECISION_VERSION = 1;
export const DEDUPE_DECISION_BYTES = 10;

/** The decision as a small tag (1–3): the id set (runtime/streams/id-set.ts) stores it. */
export const DECISION_TAGS: Readonly<Record<DecisionKind, number>> = {
  routed: 1,
  failure: 2,
  'dead-lettered': 3,
};

const KINDS_BY_TAG: readonly (DecisionKind | undefined)[] = [undefined, 'routed', 'failure', 'dead-lettered'];

export function decisionOfTag(tag: number): DecisionKind | undefined {
  return KINDS_BY_TAG[tag];
}

export function encodeDedupeDecision({ kind, seenAt }: DedupeDecision): Buffer {
  // From Node's pool, not zero-filled: every byte is written below.
  const out = Buffer.allocUnsafe(DEDUPE_DECISION_BYTES);
  out[0] = DEDUPE_DECISION_VERSION;
  out[1] = DECISION_TAGS[kind];
  const ms = Math.trunc(seenAt);
  if (Number.isSafeInteger(ms)) {
    // The int64 as two 32-bit halves: one per routed event, and a BigInt costs twice the whole encode.
    const high = Math.floor(ms / 2 ** 32);
    out.writeInt32BE(high, 2);
    out.writeUInt32BE(ms - high * 2 ** 32, 6);
  } else out.writeBigInt64BE(BigInt(ms), 2); // throws for NaN and ±Infinity, as before
  return out;
}

/** Throws on a value this version cannot read: restore must not guess at its own state. */
export function decodeDedupeDecision(value: Uint8Array): DedupeDecision {
  const buf = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  if (buf.byteLength !== DEDUPE_DECISION_BYTES || buf.readUInt8(0) !== DEDUPE_DECISION_VERSION) {
    throw new Error(
      `unreadable dedupe decision: ${buf.byteLength} bytes, version ${buf.byteLength > 0 ? buf.readUInt8(0) : 'none'}`,
    );
  }
  const kind = decisionOfTag(buf.readUInt8(1));
  if (kind === undefined) throw new Error(`unreadable dedupe decision: unknown decision ${buf.readUInt8(1)}`);
  return { kind, seenAt: Number(buf.readBigInt64BE(2)) };
}
