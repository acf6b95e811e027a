// Raw records the router cannot decode at all (not the envelope's Avro, unknown schema id, no value):
// they go to the DLQ with what the record had, and never stop their partition.
import { classifyRecordError } from '../../runtime/streams/errors.js';
import type { RawEnvelope } from '../../schemas/raw-envelope.js';
import type { DeadLetter, DlqReason, DlqStage } from './dead-letter.js';

/** The reason of a dead letter for a record that is not a raw envelope. */
export const UNDECODABLE_REASON = 'envelope-undecodable' satisfies DlqReason;
export const DECODE_STAGE = 'dedupe-router.decode' satisfies DlqStage;

export type RawInput =
  | { readonly ok: true; readonly envelope: RawEnvelope }
  | {
      readonly ok: false;
      readonly message: string;
      readonly key: string | null;
      readonly value: Buffer | null;
      readonly timestamp: number;
      readonly position: string;
    };

/**
 * Whether a decode error says the bytes are bad (a poison record) rather than that the registry could
 * not be asked (then the batch is retried, not dead-lettered): the stream kit's one classification.
 */
export function isUndecodable(error: unknown): boolean {
  return classifyRecordError(error) === 'deterministic';
}

/** The dead letter of an undecodable record: its bytes as the body, its key as the id. */
export function undecodableDeadLetter(
  input: Extract<RawInput, { ok: false }>,
  headers: Readonly<Record<string, string>>,
): DeadLetter {
  return {
    reason: UNDECODABLE_REASON,
    message: `the raw record at ${input.position} is not a raw envelope: ${input.message}`,
    stage: DECODE_STAGE,
    webhookId: input.key ?? `offset:${input.position}`,
    source: '',
    trigger: null,
    webhookDate: null,
    receivedAt: input.timestamp,
    body: input.value ?? Buffer.alloc(0),
    headers: { ...headers },
    query: null,
    verifiedKeyId: null,
    ingestId: '',
  };
}
