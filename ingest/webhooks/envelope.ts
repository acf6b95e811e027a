// Builds the raw envelope (schemas/raw-envelope.avsc) from an accepted request.
import type { IncomingHttpHeaders } from 'node:http';
import type { RawEnvelope } from '../../schemas/raw-envelope.js';
import type { Extracted } from './extract.js';

/** Headers that describe the delivery and are always kept when present. */
const KEPT = new Set(['content-type', 'content-length', 'content-encoding', 'user-agent', 'accept']);

/**
 * Other `x-` headers are kept too (the platform may add its own), except anything that looks like a
 * credential: a record lives forever in webhooks.raw. Hop-by-hop headers, cookies and authorization
 * never match either rule.
 */
const SECRET_LOOKING = /auth|token|secret|cookie|session|passw|api-?key|credential/;

export function keepHeader(name: string): boolean {
  if (KEPT.has(name)) return true;
  return name.startsWith('x-') && !SECRET_LOOKING.test(name);
}

/** Node gives header names in lower case already; repeated headers are joined as HTTP allows. */
export function envelopeHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || !keepHeader(name)) continue;
    kept[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return kept;
}

/** The query string without its `?`, or null when the URL has none. */
export function queryString(url: string): string | null {
  const at = url.indexOf('?');
  return at < 0 || at === url.length - 1 ? null : url.slice(at + 1);
}

export function buildEnvelope(input: {
  source: string;
  body: Buffer;
  headers: IncomingHttpHeaders;
  url: string;
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
    query: queryString(input.url),
    verifiedKeyId: input.verifiedKeyId,
    ingestId: input.ingestId,
  };
}
