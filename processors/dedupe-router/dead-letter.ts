// The reasons a delivery is dead-lettered, and the value of `webhooks.dlq`: the envelope as it
// was stored (so `redrive` can append it to `webhooks.raw` again), the reason and the stage.
import type { RawEnvelope } from '../../schemas/raw-envelope.js';

/** Every reason the router dead-letters a delivery for, in the order the checks run. */
export const DLQ_REASONS = [
  /** The raw record is not a raw envelope (not its Avro, an unknown schema id, no value): poison.ts. */
  'envelope-undecodable',
  /** Not UTF-8 JSON, a key given twice with different values, or nested deeper than MAX_JSON_DEPTH (512). */
  'body-not-json',
  /** JSON, but not an object. */
  'body-not-object',
  /**
   * No `webhook.id` (ingest keyed the record `sha1:<digest>`), or not a non-empty string (a number:
   * ingest keyed the record by the number's text, and the contract's id is a string).
   */
  'webhook-id-missing',
  /** `webhook.id` differs from the raw record's id: the key the dedupe used is not the body's. */
  'webhook-id-mismatch',
  'trigger-missing',
  /** A trigger that does not split into entity and action (`Ping`, `user_added`). */
  'trigger-unrecognized',
  'webhook-date-missing',
  /** Not an ISO 8601 date-time with a zone. */
  'webhook-date-invalid',
  /**
   * `receivedAt − webhook.date` over WEBHOOK_MAX_AGE (the platform's 72 h of retries plus slack): a
   * replay of a captured delivery, or one the platform no longer sends. Redrivable by an operator.
   */
  'too-old',
  /** `webhook.date` more than WEBHOOK_MAX_AHEAD after `receivedAt`. Redrivable by an operator. */
  'from-the-future',
  /** `query` present but not the contract's shape (e.g. `variables` not an object). */
  'query-invalid',
  /** A non-empty GraphQL `errors` array, whatever `data` holds. */
  'graphql-errors',
  /** `data` missing or null. */
  'data-missing',
  'data-not-object',
  /** `data` has no root field. */
  'root-field-missing',
  /** `data` has more than one root field: which one is the record would be a guess. */
  'root-field-ambiguous',
  /** The root field is null (GraphQL's "not found" without an OperationFailure), not a deletion. */
  'root-field-null',
  'root-field-not-object',
  /** The root field has no `__typename`: record and OperationFailure cannot be told apart. */
  'typename-missing',
  /** The record or OperationFailure violates the contract (e.g. `fuelsSwitched` not an integer). */
  'record-invalid',
  /** Neither the record nor `query.variables` gives an id to key the event by. */
  'entity-id-missing',
  /** The router itself threw on this delivery (a bug): dead-lettered by the stream kit, its partition goes on. */
  'processor-error',
  /**
   * An output would exceed its topic's max.message.bytes: found by the stream kit once written, or by
   * route() when the record's field paths alone could not fit (route.ts fieldsOverLimit).
   */
  'output-too-large',
  /** enrich: the endpoint answered the fetch with a status that is no GraphQL answer (400, 404, …). */
  'fetch-refused',
  /** enrich: the endpoint answered about another record than the one asked for. */
  'answer-mismatch',
] as const;

export type DlqReason = (typeof DLQ_REASONS)[number];

/**
 * Where in the pipeline a delivery is given up: decoding the raw record into an envelope (poison.ts),
 * parsing the body's bytes, or reading the contract (route.ts).
 */
export const DLQ_STAGES = [
  'dedupe-router.decode',
  'dedupe-router.parse',
  'dedupe-router.route',
  /** The stream kit gave the record up (processor-error, output-too-large). */
  'dedupe-router.process',
  /** The enrich stage's fetch of the full record (processors/enrich): its answer, not the delivery. */
  'enrich.fetch',
] as const;

export type DlqStage = (typeof DLQ_STAGES)[number];

export interface DeadLetter {
  reason: DlqReason;
  /** For people: what was wrong, naming the field. */
  message: string;
  stage: DlqStage;
  // The raw envelope's fields, unchanged.
  webhookId: string;
  source: string;
  trigger: string | null;
  webhookDate: string | null;
  receivedAt: number;
  body: Buffer;
  headers: Record<string, string>;
  query: string | null;
  verifiedKeyId: string | null;
  ingestId: string;
}

/**
 * A dead letter's message is cut to this many characters: messages quote what was wrong (an id, a
 * trigger, a date), and a body near INGEST_BODY_LIMIT quoting a large part of itself would make a dead
 * letter larger than webhooks.dlq takes (the envelope plus ENVELOPE_OVERHEAD_BYTES).
 */
export const MAX_DEAD_LETTER_MESSAGE_CHARS = 2_000;

/** The message, cut to MAX_DEAD_LETTER_MESSAGE_CHARS with a note of how much was cut. */
export function boundedMessage(message: string): string {
  if (message.length <= MAX_DEAD_LETTER_MESSAGE_CHARS) return message;
  const cut = message.length - MAX_DEAD_LETTER_MESSAGE_CHARS;
  return `${message.slice(0, MAX_DEAD_LETTER_MESSAGE_CHARS)}… (${cut} more characters)`;
}

export function buildDeadLetter(
  envelope: RawEnvelope,
  reason: DlqReason,
  message: string,
  stage: DlqStage,
): DeadLetter {
  return {
    reason,
    message: boundedMessage(message),
    stage,
    webhookId: envelope.webhookId,
    source: envelope.source,
    trigger: envelope.trigger,
    webhookDate: envelope.webhookDate,
    receivedAt: envelope.receivedAt,
    body: envelope.body,
    headers: { ...envelope.headers },
    query: envelope.query,
    verifiedKeyId: envelope.verifiedKeyId,
    ingestId: envelope.ingestId,
  };
}
