// The quarantined request (quarantined-request.avsc) as a TypeScript type; a unit test keeps the two in step.

/** The schema file (schemas/quarantined-request.avsc) of webhooks.quarantine's values. */
export const QUARANTINED_REQUEST_SCHEMA = 'quarantined-request';

/** Why a signature check failed (ingest/errors.ts SignatureFailure): the values of `reason`. */
export const QUARANTINE_REASONS = ['missing', 'algorithm', 'malformed', 'mismatch'] as const;

/** A request refused with 401 by a signed source and kept for promotion. Field docs live in the .avsc. */
export interface QuarantinedRequest {
  webhookId: string;
  source: string;
  trigger: string | null;
  webhookDate: string | null;
  /** Milliseconds since the epoch (Avro timestamp-millis, decoded as its long). */
  receivedAt: number;
  body: Buffer;
  headers: Record<string, string>;
  query: string | null;
  reason: string;
  triedKeyIds: string[];
  ingestId: string;
}
