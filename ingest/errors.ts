// Ingest's one error registry: every answer other than 200 is one of these, with its HTTP status.
import createError from '@fastify/error';

// Every one of these is an expected answer, not a bug: no stack trace is captured (the 5th argument).

/** Seconds the platform is asked to wait before retrying a 503 (it retries for 72 h whatever we say). */
export const RETRY_AFTER_SECONDS = 5;

/**
 * Every refusal of who sent a request to a known source: a missing, malformed or wrong signature. One
 * answer for all, so a client does not learn which check failed (the reason is in the metrics:
 * hookledger_ingest_signature_failures_total).
 */
export const INGEST_ERR_SIGNATURE = createError(
  'INGEST_ERR_SIGNATURE',
  'Signature check failed',
  401,
  Error,
  false,
);

/**
 * No source of that name. A source name is a routing label in the URL the platform is configured with,
 * not a credential: saying so tells whoever mistyped the URL what is wrong, and helps no one forge a
 * signature.
 */
export const INGEST_ERR_UNKNOWN_SOURCE = createError(
  'INGEST_ERR_UNKNOWN_SOURCE',
  'Unknown source',
  404,
  Error,
  false,
);

export const INGEST_ERR_BODY_TOO_LARGE = createError<'INGEST_ERR_BODY_TOO_LARGE', 413, [number]>(
  'INGEST_ERR_BODY_TOO_LARGE',
  'Body over the limit of %d bytes',
  413,
  Error,
  false,
);

/** Kafka (or the schema registry) cannot take the record now: the producer is down or being replaced. */
export const INGEST_ERR_UNAVAILABLE = createError(
  'INGEST_ERR_UNAVAILABLE',
  'Storage unavailable',
  503,
  Error,
  false,
);

/** The pending queue is over its byte cap: answered at once, before the record is queued. */
export const INGEST_ERR_OVERLOADED = createError(
  'INGEST_ERR_OVERLOADED',
  'Too many pending bytes',
  503,
  Error,
  false,
);

/** The internal deadline passed before Kafka acknowledged; the record may still be written (dedupe is downstream). */
export const INGEST_ERR_DEADLINE = createError<'INGEST_ERR_DEADLINE', 503, [number]>(
  'INGEST_ERR_DEADLINE',
  'Not acknowledged within %d ms',
  503,
  Error,
  false,
);

/** Request bodies being received take all of INGEST_MAX_RECEIVING_BYTES: answered before the body is read. */
export const INGEST_ERR_RECEIVING = createError(
  'INGEST_ERR_RECEIVING',
  'Too many request bytes being received',
  503,
  Error,
  false,
);

/** Shutting down: no new records are accepted. */
export const INGEST_ERR_CLOSING = createError('INGEST_ERR_CLOSING', 'Shutting down', 503, Error, false);

/** Why a signature check failed; also the `reason` label of the signature-failure metric. */
export type SignatureFailure = 'missing' | 'algorithm' | 'malformed' | 'mismatch';

/** Whether an error is one of ours that asks the client to retry later. */
export function isRetryLater(error: unknown): boolean {
  return (error as { statusCode?: unknown } | null)?.statusCode === 503;
}
