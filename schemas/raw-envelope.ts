// The raw envelope (raw-envelope.avsc) as a TypeScript type; a unit test keeps the two in step.

/** The schema file (schemas/raw-envelope.avsc) of webhooks.raw's values. */
export const RAW_ENVELOPE_SCHEMA = 'raw-envelope';

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
