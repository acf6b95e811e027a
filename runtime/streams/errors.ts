// How the stream kit reads librdkafka errors: keep going, abort and retry, or stop the app.
import { ERRORS, isFenced } from '../kafka/rdkafka.js';
import { isProgrammerError } from './retry.js';

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

/**
 * The brokers refused the group's session timeout: JoinGroup answered INVALID_SESSION_TIMEOUT, because
 * it lies outside their group.min.session.timeout.ms … group.max.session.timeout.ms (6 s … 30 min by
 * default). librdkafka hands that to the poll as a consumer error, then sends the same JoinGroup again
 * every few hundred ms for ever: only another setting clears it, so the stage stops with one line.
 */
export class SessionTimeoutRefusedError extends StreamAppStoppedError {
  override name = 'SessionTimeoutRefusedError';
}

/** The one line a refused session timeout stops the stage with; undefined for any other error. */
export function sessionTimeoutRefused(
  error: unknown,
  sessionTimeoutMs: number,
): SessionTimeoutRefusedError | undefined {
  if ((error as { code?: unknown } | undefined)?.code !== ERRORS.ERR_INVALID_SESSION_TIMEOUT)
    return undefined;
  return new SessionTimeoutRefusedError(
    `the brokers refused the consumer group's session timeout of ${sessionTimeoutMs} ms (PROCESSOR_SESSION_TIMEOUT_MS): it must lie within their group.min.session.timeout.ms and group.max.session.timeout.ms (6000 and 1800000 ms unless changed); raise PROCESSOR_SESSION_TIMEOUT_MS, or lower group.min.session.timeout.ms on every broker`,
    { cause: error },
  );
}

/** A store on disk failed to write (a full disk, a broken volume): the stage stops with one line. */
export class StateStoreFailedError extends StreamAppStoppedError {
  override name = 'StateStoreFailedError';
}

/**
 * The app cannot go on with its clients and in-memory state, but new ones can (Kafka Streams'
 * REPLACE_THREAD): a commit whose outcome is unknown, a partition that could not be moved back after a
 * failure, a poll loop stuck past the transaction timeout. The app stops with it, and the rejoining
 * wrapper (rejoining-app.ts) starts a new app, whose partitions restore from what was committed.
 */
export class NewClientsNeededError extends Error {
  override name = 'NewClientsNeededError';
}

/** commitTransaction failed in a way that does not say whether EndTxn reached the coordinator. */
export class CommitOutcomeUnknownError extends NewClientsNeededError {
  override name = 'CommitOutcomeUnknownError';
}

/** The poll loop (or its failure handling) waited longer than it may: something never answered. */
export class LoopStalledError extends NewClientsNeededError {
  override name = 'LoopStalledError';
}

/**
 * The consumer refused to take an assignment or to give partitions back (incrementalAssign or
 * incrementalUnassign threw). The group counts them as this member's either way, so going on would own
 * partitions nobody reads, or hold a rebalance that never ends; a new consumer rejoins cleanly.
 */
export class RebalanceRefusedError extends NewClientsNeededError {
  override name = 'RebalanceRefusedError';
}

/** The open transaction holds records of a partition this instance no longer owns: it must abort. */
export class PartitionsLostError extends Error {
  override name = 'PartitionsLostError';
  readonly abortable = true;
}

/**
 * How a failure on one record is retried. transient: the same record may succeed later (the registry or
 * a broker out of reach, a timeout, a 5xx or 429): retried with a back-off for as long as it lasts.
 * deterministic: the same record fails the same way (bad bytes, a bug, a 4xx answer, a value over a
 * size limit): tried a few times (RECORD_ATTEMPTS), then dead-lettered.
 */
export type RecordErrorClass = 'transient' | 'deterministic';

/**
 * An answer of the schema registry (an HTTP status), as opposed to bytes that do not decode or a value a
 * schema refuses. Said of an output, it is never the record's fault: the stage found its schema at start,
 * so a 404 is a registry reading its schemas back, a 401 an expired login.
 */
export function isRegistryAnswer(error: unknown): boolean {
  return typeof (error as { status?: unknown } | undefined)?.status === 'number';
}

/**
 * A record failing deterministically is tried this many times, over at least DEAD_LETTER_AFTER_MS from
 * its first failure, then dead-lettered (docs/design.md).
 */
export const RECORD_ATTEMPTS = 5;
export const DEAD_LETTER_AFTER_MS = 10_000;

/** Node's and undici's codes for a peer out of reach or too slow. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_SOCKET',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

/**
 * The registry client (mappersmith) reports a request that never got an answer as a 400 whose message
 * names the cause ("Error, status 400: connect ECONNREFUSED 127.0.0.1:8081", "Timeout (5000ms)"):
 * classified by that cause, not by the status it prints.
 */
const NO_ANSWER =
  /\b(ECONNREFUSED|ECONNRESET|ECONNABORTED|ETIMEDOUT|EPIPE|EHOSTUNREACH|ENETUNREACH|ENOTFOUND|EAI_AGAIN)\b|Timeout \(\d+ms\)|socket hang up|fetch failed/i;

/** Kafka refuses the record itself: sending it again fails the same way. */
const RECORD_REFUSED_CODES = new Set<number>([
  ERRORS.ERR_MSG_SIZE_TOO_LARGE,
  ERRORS.ERR_INVALID_RECORD,
  ERRORS.ERR_RECORD_LIST_TOO_LARGE,
]);

export function classifyRecordError(error: unknown): RecordErrorClass {
  for (let e: unknown = error, depth = 0; e !== undefined && e !== null && depth < 5; depth++) {
    const kind = classifyOne(e);
    if (kind !== undefined) return kind;
    e = (e as { cause?: unknown }).cause;
  }
  return 'deterministic';
}

/** One error of a cause chain: its class, or undefined when it does not say (its cause may). */
function classifyOne(error: unknown): RecordErrorClass | undefined {
  const e = error as { code?: unknown; status?: unknown; message?: unknown; name?: unknown };
  // Node's fetch reports a peer out of reach as a TypeError "fetch failed" (the cause says which).
  if (error instanceof TypeError && e.message === 'fetch failed') return 'transient';
  // Bugs, not weather, whatever code they carry (a TypeError with code ERR_INVALID_ARG_TYPE).
  if (isProgrammerError(error)) return 'deterministic';
  if (typeof e.code === 'string' && NETWORK_CODES.has(e.code)) return 'transient';
  if (typeof e.code === 'number' && e.name === 'KafkaError')
    return RECORD_REFUSED_CODES.has(e.code) ? 'deterministic' : 'transient';
  const message = typeof e.message === 'string' ? e.message : '';
  if (typeof e.status === 'number') {
    if (e.status >= 500 || e.status === 429 || e.status === 408) return 'transient';
    return NO_ANSWER.test(message) ? 'transient' : 'deterministic';
  }
  if (NO_ANSWER.test(message)) return 'transient';
  return undefined;
}

/** librdkafka's codes (and the broker's) for a cluster out of reach or not answering yet: a broker restarting. */
const OUT_OF_REACH_CODES = new Set<number>([
  ERRORS.ERR__TRANSPORT,
  ERRORS.ERR__ALL_BROKERS_DOWN,
  ERRORS.ERR__RESOLVE,
  ERRORS.ERR__TIMED_OUT,
  ERRORS.ERR__TIMED_OUT_QUEUE,
  ERRORS.ERR__WAIT_COORD,
  ERRORS.ERR_REQUEST_TIMED_OUT,
  ERRORS.ERR_COORDINATOR_NOT_AVAILABLE,
  ERRORS.ERR_COORDINATOR_LOAD_IN_PROGRESS,
  ERRORS.ERR_NOT_COORDINATOR,
  ERRORS.ERR_LEADER_NOT_AVAILABLE,
  ERRORS.ERR_NOT_LEADER_FOR_PARTITION,
]);

/**
 * The cluster out of reach, or not ready to answer yet (a broker restarting, its coordinators loading):
 * an app that fails to start this way may start a little later. Wrong credentials or permissions, a
 * one-line stop, a fatal error and a bug never are. The code may be on a cause.
 */
export function isClusterOutOfReach(error: unknown): boolean {
  let current = error;
  for (let depth = 0; depth < 5 && typeof current === 'object' && current !== null; depth++) {
    if (current instanceof StreamAppStoppedError || isProgrammerError(current)) return false;
    const { code, fatal, retriable, cause } = current as {
      code?: unknown;
      fatal?: unknown;
      retriable?: unknown;
      cause?: unknown;
    };
    if (fatal === true) return false;
    if (typeof code === 'number') {
      if (FATAL_CODES.has(code)) return false;
      if (OUT_OF_REACH_CODES.has(code)) return true;
    }
    if (typeof code === 'string' && NETWORK_CODES.has(code)) return true;
    // BrokersUnreachableError, a DescribeConfigs refusal that a moment cures, librdkafka's own flag.
    if (retriable === true) return true;
    current = cause;
  }
  return false;
}
