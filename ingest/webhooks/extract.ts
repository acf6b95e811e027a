// Reads the three fields ingest needs (webhook id, trigger, date) from the raw bytes; the bytes stay untouched.
import { createHash } from 'node:crypto';
import { isLosslessNumber, parse as parseLossless } from 'lossless-json';
import { MAX_WEBHOOK_ID_BYTES } from '../../schemas/raw-envelope.js';

/** webhook.trigger and webhook.date are copied into the envelope up to this many UTF-8 bytes (else null). */
export const MAX_COPIED_FIELD_BYTES = 1_024;

export interface Extracted {
  /**
   * webhook.id, or `sha1:<hex digest of the body>` when the body has no usable id (none, empty, not a
   * string or number, longer than MAX_WEBHOOK_ID_BYTES) or does not parse.
   */
  webhookId: string;
  /** Whether webhookId came from the body (false: it is the digest). */
  fromBody: boolean;
  /** As sent, when a string of at most MAX_COPIED_FIELD_BYTES (the router reads the body's own). */
  trigger: string | null;
  webhookDate: string | null;
}

/** A string the envelope may copy: at most `maxBytes` of UTF-8 (a character takes at most 3 per UTF-16 unit). */
function fits(value: string, maxBytes: number): boolean {
  return value.length * 3 <= maxBytes || Buffer.byteLength(value, 'utf8') <= maxBytes;
}

function copied(value: unknown): string | null {
  return typeof value === 'string' && fits(value, MAX_COPIED_FIELD_BYTES) ? value : null;
}

/** The key of a body without a usable webhook id: stable across retries of the same bytes. */
export function digestKey(body: Buffer): string {
  return `sha1:${createHash('sha1').update(body).digest('hex')}`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A numeric id keeps its exact text: JSON.parse would round 12345678901234567890. */
function numericIdText(text: string): string | undefined {
  try {
    const parsed = parseLossless(text) as { webhook?: { id?: unknown } };
    const id = parsed?.webhook?.id;
    return isLosslessNumber(id) ? id.value : undefined;
  } catch {
    return undefined;
  }
}

// Decoded as the router decodes it (processors/dedupe-router/parse-body.ts), so both read the same id:
// bytes that are not UTF-8 are not JSON (fatal), and a leading UTF-8 BOM, which some senders add, is
// skipped (TextDecoder's default) where Buffer#toString would keep it and JSON.parse would then fail.
const utf8 = new TextDecoder('utf-8', { fatal: true });

export function extract(body: Buffer): Extracted {
  let parsed: unknown;
  let text: string;
  try {
    text = utf8.decode(body);
    parsed = JSON.parse(text);
  } catch {
    return { webhookId: digestKey(body), fromBody: false, trigger: null, webhookDate: null };
  }
  const webhook = isRecord(parsed) && isRecord(parsed.webhook) ? parsed.webhook : undefined;
  const trigger = copied(webhook?.trigger);
  const webhookDate = copied(webhook?.date);
  const id = webhook?.id;
  let webhookId: string | undefined;
  if (typeof id === 'string' && id.length > 0) webhookId = id;
  else if (typeof id === 'number') webhookId = numericIdText(text);
  if (webhookId === undefined || !fits(webhookId, MAX_WEBHOOK_ID_BYTES))
    return { webhookId: digestKey(body), fromBody: false, trigger, webhookDate };
  return { webhookId, fromBody: true, trigger, webhookDate };
}
