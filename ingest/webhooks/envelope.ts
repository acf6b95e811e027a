// Builds the raw envelope (schemas/raw-envelope.avsc) from an accepted request.
import type { IncomingHttpHeaders } from 'node:http';
import type { RawEnvelope } from '../../schemas/raw-envelope.js';
import type { Extracted } from './extract.js';

/**
 * The headers a record keeps: an allow-list, because a record lives for ever in webhooks.raw and
 * anything else a client or proxy adds (cookies, `x-access-key`, tracing ids) may be a credential.
 * The contract's own headers (docs/webhook-contract.md) and what describes the bytes; never
 * `x-signature`: a reader of webhooks.raw could replay a signed delivery with it (the quarantine keeps
 * it, where promote verifies it again).
 */
export const KEPT_HEADERS: ReadonlySet<string> = new Set([
  'content-type',
  'content-length',
  'content-encoding',
  'user-agent',
  'accept',
]);

/** A kept header's value is cut to this many characters: a record's headers stay small whatever is sent. */
export const MAX_HEADER_VALUE_CHARS = 512;

export function keepHeader(name: string): boolean {
  return KEPT_HEADERS.has(name);
}

/** Node gives header names in lower case already; repeated headers are joined as HTTP allows. */
export function envelopeHeaders(
  headers: IncomingHttpHeaders,
  kept: ReadonlySet<string> = KEPT_HEADERS,
): Record<string, string> {
  const result: Record<string, string> = {};
  for (const name of kept) {
    const value = headers[name];
    if (value === undefined) continue;
    const text = Array.isArray(value) ? value.join(', ') : value;
    result[name] = text.length > MAX_HEADER_VALUE_CHARS ? text.slice(0, MAX_HEADER_VALUE_CHARS) : text;
  }
  return result;
}

export const MASKED = '***';

/** MASKED in place of a value; nothing for an empty one. */
function mask(value: string): string {
  return value === '' ? '' : MASKED;
}

function decodedName(name: string): string {
  try {
    return decodeURIComponent(name.replaceAll('+', ' ')).toLowerCase();
  } catch {
    return name.toLowerCase(); // not valid percent-encoding: judge the name as sent
  }
}

/**
 * The query string without its `?`, or null when the URL has none. Every parameter keeps its name and
 * order; its value is kept only when its (decoded, lower-cased) name is in `kept`
 * (INGEST_KEPT_QUERY_PARAMETERS), else masked: senders put tokens in URLs (`?token=`, `?pass=`), and
 * a record lives for ever in webhooks.raw. An empty parameter or value stays empty (it hides nothing),
 * so the stored query is at most twice the URL's, which Node bounds (16 KiB with the headers): with
 * `***` for each empty one, a URL of 16,000 `&` was stored at four times its length, past the room a
 * raw record has beside a body at its limit (ENVELOPE_OVERHEAD_BYTES), and refused.
 */
export function queryString(url: string, kept: ReadonlySet<string> = new Set()): string | null {
  const at = url.indexOf('?');
  if (at < 0 || at === url.length - 1) return null;
  return url
    .slice(at + 1)
    .split('&')
    .map((parameter) => {
      const equals = parameter.indexOf('=');
      const name = equals < 0 ? parameter : parameter.slice(0, equals);
      if (kept.has(decodedName(name))) return parameter;
      // A parameter without a value may be a token on its own (`?s3cr3t`): masked whole unless kept.
      return equals < 0 ? mask(parameter) : `${name}=${mask(parameter.slice(equals + 1))}`;
    })
    .join('&');
}

export function buildEnvelope(input: {
  source: string;
  body: Buffer;
  headers: IncomingHttpHeaders;
  /** The masked query string (queryString()). */
  query: string | null;
  extracted: Extracted;
  verifiedKeyId: string | null;
  receivedAt: number;
  ingestId: string;
}): RawEnvelope {
  return {
    webhookId: input.extracted.webhookId,
    source: input.source,
    trigger: input.extracted.trigger,
    webhookDate: input.extracted.webhookDate,
    receivedAt: input.receivedAt,
    body: input.body,
    headers: envelopeHeaders(input.headers),
    query: input.query,
    verifiedKeyId: input.verifiedKeyId,
    ingestId: input.ingestId,
  };
}
