// The raw envelope (raw-envelope.avsc) as a TypeScript type; a unit test keeps the two in step.

/** The schema file (schemas/raw-envelope.avsc) of webhooks.raw's values. */
export const RAW_ENVELOPE_SCHEMA = 'raw-envelope';

/**
 * The longest webhook.id ingest keys a record by, in UTF-8 bytes. The raw record holds the body and, around
 * it, at most ENVELOPE_OVERHEAD_BYTES (topics.ts): the id twice (key and value), the trigger, the date, the
 * kept headers and the query string. A longer id is no platform's (theirs are short identifiers) and would
 * push a body near INGEST_BODY_LIMIT over raw's limit, refused on every retry: such a body is keyed by its
 * digest instead (ingest/webhooks/extract.ts), stored, and dead-lettered by the router (webhook-id-mismatch).
 */
export const MAX_WEBHOOK_ID_BYTES = 8_192;

/** One authentic webhook delivery exactly as received. Field docs live in the .avsc. */
export interface RawEnvelope {
  webhookId: string;
  source: string;
  trigger: string | null;
  webhookDate: string | null;
  /**
   * Milliseconds since the epoch (Avro timestamp-millis). The registry client decodes logical types as
   * their underlying long, so this is a number, not a Date.
   */
  receivedAt: number;
  body: Buffer;
  headers: Record<string, string>;
  query: string | null;
  verifiedKeyId: string | null;
  ingestId: string;
}

const isText = (v: unknown) => typeof v === 'string';
const isTextOrNull = (v: unknown) => v === null || typeof v === 'string';

/**
 * Whether a decoded value has the raw envelope's shape. A record is decoded with the schema it names
 * (its writer's): one written to webhooks.raw under another registered schema (by hand, with the wrong
 * subject) decodes as whatever that is, and must be told apart from an envelope before it is routed.
 */
export function isRawEnvelope(value: unknown): value is RawEnvelope {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<keyof RawEnvelope, unknown>;
  return (
    isText(v.webhookId) &&
    isText(v.source) &&
    isText(v.ingestId) &&
    typeof v.receivedAt === 'number' &&
    Buffer.isBuffer(v.body) &&
    typeof v.headers === 'object' &&
    v.headers !== null &&
    isTextOrNull(v.trigger) &&
    isTextOrNull(v.webhookDate) &&
    isTextOrNull(v.query) &&
    isTextOrNull(v.verifiedKeyId)
  );
}
