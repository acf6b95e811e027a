// How the stream kit reads librdkafka errors: keep going, abort and retry, or stop the app.
import { ERRORS, isFenced } from '../kafka/rdkafka.js';

/**
 * retriable: try the same call again. abortable: abort the transaction, rewind, retry after a
 * back-off. fenced: another producer took our transactional id, or the broker aborted our transaction
 * after its timeout (we were frozen): only a new producer may go on. fatal: stop the app.
 */
export type ErrorKind = 'retriable' | 'abortable' | 'fenced' | 'fatal';

/** Failures no new client clears: the credentials or the permissions are wrong. */
const PERMANENT_CODES = new Set<number>([
  ERRORS.ERR__AUTHENTICATION,
  ERRORS.ERR_SASL_AUTHENTICATION_FAILED,
  ERRORS.ERR_TOPIC_AUTHORIZATION_FAILED,
  ERRORS.ERR_GROUP_AUTHORIZATION_FAILED,
  ERRORS.ERR_CLUSTER_AUTHORIZATION_FAILED,
  ERRORS.ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
]);

const FATAL_CODES = new Set<number>([
  ...PERMANENT_CODES,
  ERRORS.ERR__FATAL,
  // Another live consumer runs with our group.instance.id: two instances were given the same id.
  ERRORS.ERR_FENCED_INSTANCE_ID,
]);

export function classifyError(error: unknown): ErrorKind {
  const e = error as
    | { code?: unknown; fatal?: unknown; retriable?: unknown; abortable?: unknown }
    | undefined;
  const code = typeof e?.code === 'number' ? e.code : undefined;
  if (code === ERRORS.ERR_FENCED_INSTANCE_ID) return 'fatal';
  if (isFenced(error)) return 'fenced';
  if (code !== undefined && FATAL_CODES.has(code)) return 'fatal';
  if (e?.fatal === true) return 'fatal';
  if (e?.abortable === true) return 'abortable';
  if (e?.retriable === true) return 'retriable';
  return 'abortable';
}

/**
 * librdkafka's fatal flag, which only its transactional producer's calls carry, for a reason of that
 * producer's own: the broker lost track of its transaction (INVALID_TXN_STATE when the coordinator came
 * back from a restart mid-transaction), or its idempotent sequence broke. That producer is unusable, its
 * transactional id is not: a new producer's InitProducerId bumps the epoch and aborts whatever the old
 * one left open. Wrong credentials or permissions are not among these: a new producer fails the same way.
 */
export function isFailedProducer(error: unknown): boolean {
  const e = error as { code?: unknown; fatal?: unknown } | undefined;
  return e?.fatal === true && !(typeof e.code === 'number' && PERMANENT_CODES.has(e.code));
}

/** The app stops: the reason, for the one line the CLI prints. */
export class StreamAppStoppedError extends Error {
  override name = 'StreamAppStoppedError';
}
