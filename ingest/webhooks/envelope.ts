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

/**
 * Query parameters whose value is masked: senders put tokens in URLs too (`?token=…`, `?api_key=…`,
 * `?sig=…`), and a record lives forever in webhooks.raw. Matched against the decoded, lower-cased name.
 */
const SECRET_LOOKING_PARAMETER = /auth|token|secret|signature|^sig$|passw|pwd|key|credential|session|cookie/;

export const MASKED = '***';

function decodedName(name: string): string {
  try {
    return decodeURIComponent(name.replaceAll('+', ' ')).toLowerCase();
  } catch {
    return name.toLowerCase(); // not valid percent-encoding: judge the name as sent
  }
}

/**
 * The query string without its `?`, or null when the URL has none. Every parameter is kept as sent,
 * in its order, except that a credential-looking one keeps its name and loses its value.
 */
export function queryString(url: string): string | null {
  const at = url.indexOf('?');
  if (at < 0 || at === url.length - 1) return null;
  return url
    .slice(at + 1)
    .split('&')
    .map((parameter) => {
      const equals = parameter.indexOf('=');
      const name = equals < 0 ? parameter : parameter.slice(0, equals);
      if (equals < 0 || !SECRET_LOOKING_PARAMETER.test(decodedName(name))) return parameter;
      return `${name}=${MASKED}`;
    })
    .join('&');
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
