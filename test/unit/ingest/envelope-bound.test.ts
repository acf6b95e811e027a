// A raw record holds the body and at most ENVELOPE_OVERHEAD_BYTES around it, whatever an authentic body
// carries: raw's max.message.bytes is sized so (schemas/topics.ts), and a record over it is refused on
// every retry (503 for 72 h, then the platform gives up: the delivery lost). The same for its dead letter.
import avro from 'avsc';
import { describe, expect, it } from 'vitest';
import { envelopeHeaders, KEPT_HEADERS, MAX_HEADER_VALUE_CHARS } from '../../../ingest/webhooks/envelope.js';
import { digestKey, extract, MAX_COPIED_FIELD_BYTES } from '../../../ingest/webhooks/extract.js';
import {
  boundedMessage,
  buildDeadLetter,
  type DeadLetter,
} from '../../../processors/dedupe-router/dead-letter.js';
import { route } from '../../../processors/dedupe-router/route.js';
import {
  MAX_WEBHOOK_ID_BYTES,
  RAW_ENVELOPE_SCHEMA,
  type RawEnvelope,
} from '../../../schemas/raw-envelope.js';
import { loadSchema } from '../../../schemas/schema-files.js';
import { envelopeMaxMessageBytes } from '../../../schemas/topics.js';

const BODY_LIMIT = 1_048_576;
/** A record's own framing (lengths, attributes, timestamp and offset deltas) and its batch header, generously. */
const FRAMING_BYTES = 512;
/** The confluent wire format's magic byte and schema id. */
const WIRE_HEADER_BYTES = 5;

const rawType = avro.Type.forSchema(JSON.parse(loadSchema(RAW_ENVELOPE_SCHEMA)) as avro.Schema);
const deadLetterType = avro.Type.forSchema(JSON.parse(loadSchema('dead-letter')) as avro.Schema);

/** A body of exactly `size` bytes whose webhook fields are the ones given, padded in `data`. */
function bodyOf(size: number, webhook: { id: string; trigger: string; date: string }): Buffer {
  const head = `{"webhook":${JSON.stringify(webhook)},"data":{"pad":"`;
  const tail = '"}}';
  const pad = size - Buffer.byteLength(head) - tail.length;
  expect(pad).toBeGreaterThanOrEqual(0);
  return Buffer.from(head + 'p'.repeat(pad) + tail);
}

/** The envelope ingest builds, every other field at its largest. */
function largestEnvelope(body: Buffer): { key: Buffer; envelope: RawEnvelope } {
  const extracted = extract(body);
  const headers = envelopeHeaders(
    Object.fromEntries([...KEPT_HEADERS].map((name) => [name, 'h'.repeat(MAX_HEADER_VALUE_CHARS + 100)])),
  );
  const envelope: RawEnvelope = {
    webhookId: extracted.webhookId,
    source: 'a-source-name-of-some-length',
    trigger: extracted.trigger,
    webhookDate: extracted.webhookDate,
    receivedAt: Date.now(),
    body,
    headers,
    // Node refuses a request line and headers over 16 KiB (ingest's maxHeaderSize).
    query: 'q'.repeat(16_384),
    verifiedKeyId: 'key-id-of-some-length',
    ingestId: '01J0000000000000000000000X',
  };
  return { key: Buffer.from(extracted.webhookId, 'utf8'), envelope };
}

const recordBytes = (key: Buffer, value: Buffer) =>
  key.length + WIRE_HEADER_BYTES + value.length + FRAMING_BYTES;

describe('a raw record and its dead letter stay under the topic limit', () => {
  const limit = envelopeMaxMessageBytes(BODY_LIMIT);

  for (const [name, char] of [
    ['ASCII', 'i'],
    ['three-byte UTF-8', '€'],
  ] as const) {
    it(`a body at INGEST_BODY_LIMIT with the longest ${name} id and copied fields ingest keeps`, () => {
      const id = char.repeat(MAX_WEBHOOK_ID_BYTES / Buffer.byteLength(char));
      const copied = char.repeat(MAX_COPIED_FIELD_BYTES / Buffer.byteLength(char));
      const body = bodyOf(BODY_LIMIT, { id, trigger: copied, date: copied });
      const { key, envelope } = largestEnvelope(body);
      expect(envelope).toMatchObject({ webhookId: id, trigger: copied, webhookDate: copied });
      expect(recordBytes(key, rawType.toBuffer(envelope))).toBeLessThanOrEqual(limit);

      // The router's dead letter of it, whatever its message quotes.
      const letter = buildDeadLetter(
        envelope,
        'webhook-id-mismatch',
        `webhook.id is ${'x'.repeat(2 * BODY_LIMIT)}`,
        'dedupe-router.route',
      );
      expect(recordBytes(key, deadLetterType.toBuffer(letter))).toBeLessThanOrEqual(limit);
    });
  }

  it('a longer id keys the record by the body’s digest; longer copied fields are left out', () => {
    const body = bodyOf(BODY_LIMIT, {
      id: 'i'.repeat(MAX_WEBHOOK_ID_BYTES + 1),
      trigger: 'T'.repeat(MAX_COPIED_FIELD_BYTES + 1),
      date: '€'.repeat(MAX_COPIED_FIELD_BYTES / 3 + 1),
    });
    expect(extract(body)).toEqual({
      webhookId: digestKey(body),
      fromBody: false,
      trigger: null,
      webhookDate: null,
    });
    const { key, envelope } = largestEnvelope(body);
    expect(recordBytes(key, rawType.toBuffer(envelope))).toBeLessThanOrEqual(limit);
    // Before: the 8 KiB-and-more id went into the key and the value, the fields into the value, and a body
    // with a 40 KB id made a 1,128,774-byte record against raw's 1,114,112.
    const unbounded = { ...envelope, webhookId: 'i'.repeat(40_000) };
    expect(recordBytes(Buffer.from(unbounded.webhookId), rawType.toBuffer(unbounded))).toBeGreaterThan(limit);
    // The router dead-letters it, saying why the ids differ.
    const decision = route(envelope);
    expect(decision.reason).toBe('webhook-id-mismatch');
    const letter = decision.outputs.find((o) => o.topic === 'webhooks.dlq')!.value as DeadLetter;
    expect(letter.message).toBe(
      `webhook.id is ${MAX_WEBHOOK_ID_BYTES + 1} bytes long, over the ${MAX_WEBHOOK_ID_BYTES} ingest keys a record by: the raw record's id is the body's digest, ${digestKey(body)}`,
    );
  });

  it('cuts a dead letter’s message, saying how much was cut', () => {
    expect(boundedMessage('short')).toBe('short');
    const long = boundedMessage('m'.repeat(5_000));
    expect(long).toBe(`${'m'.repeat(2_000)}… (3000 more characters)`);
  });
});
