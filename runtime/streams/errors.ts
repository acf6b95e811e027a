// How the stream kit reads librdkafka errors: keep going, abort and retry, or stop the app.
import { ERRORS, isFenced } from '../kafka/rdkafka.js';

/**
 * retriable: try the same call again. abortable: abort the transaction, rewind, retry after a
 * back-off. fenced: another producer took our transactional id, or the broker aborted our transaction
 * after its timeout (we were frozen): only a new producer may go on. fatal: stop the app.
 */
export type ErrorKind = 'retriable' | 'abortable' | 'fenced' | 'fatal';

const FATAL_CODES = new Set<number>([
  ERRORS.ERR__FATAL,
  ERRORS.ERR__AUTHENTICATION,
  ERRORS.ERR_SASL_AUTHENTICATION_FAILED,
  ERRORS.ERR_TOPIC_AUTHORIZATION_FAILED,
  ERRORS.ERR_GROUP_AUTHORIZATION_FAILED,
  ERRORS.ERR_CLUSTER_AUTHORIZATION_FAILED,
  ERRORS.ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
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

/** The app stops: the reason, for the one line the CLI prints. */
export class StreamAppStoppedError extends Error {
  override name = 'StreamAppStoppedError';
}
