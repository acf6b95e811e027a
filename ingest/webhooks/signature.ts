// The webhook signature check: HMAC-SHA1 over the raw bytes, compared in constant time, any active key.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { SignatureFailure } from '../errors.js';

const PREFIX = 'sha1=';
const SHA1_HEX_LENGTH = 40;
const HEX = /^[0-9a-fA-F]+$/;

export type SignatureCheck = { ok: true; keyId: string } | { ok: false; reason: SignatureFailure };

/** Parses `sha1=<hex>` into the digest bytes; the prefix is matched case-insensitively, the hex in either case. */
export function parseSignatureHeader(
  header: string | string[] | undefined,
): { ok: true; digest: Buffer } | { ok: false; reason: SignatureFailure } {
  if (header === undefined || header === '') return { ok: false, reason: 'missing' };
  // The header given twice (a proxy that repeats it; Node joins the copies with ", "): the same
  // signature twice is that signature; two different ones are ambiguous, refused rather than guessed.
  // (A single header, the usual case, allocates no list.)
  let value: string;
  if (typeof header === 'string' && !header.includes(',')) value = header.trim();
  else {
    const copies = (Array.isArray(header) ? header : header.split(',')).map((copy) => copy.trim());
    if (copies.some((copy) => copy !== copies[0])) return { ok: false, reason: 'malformed' };
    value = copies[0]!;
  }
  const eq = value.indexOf('=');
  if (eq < 0) return { ok: false, reason: 'malformed' };
  if (value.slice(0, eq + 1).toLowerCase() !== PREFIX) return { ok: false, reason: 'algorithm' };
  const hex = value.slice(eq + 1);
  if (hex.length !== SHA1_HEX_LENGTH || !HEX.test(hex)) return { ok: false, reason: 'malformed' };
  return { ok: true, digest: Buffer.from(hex, 'hex') };
}

/**
 * Checks the header against the source's keys in order (rotation: any active key verifies). Each
 * comparison is constant-time; stopping at the first match reveals at most which key id matched, which
 * is no secret (it is stored in the record), and a forged signature is always tried against every key.
 */
export function verifySignature(
  body: Buffer,
  header: string | string[] | undefined,
  keys: ReadonlyMap<string, Buffer>,
): SignatureCheck {
  const parsed = parseSignatureHeader(header);
  if (!parsed.ok) return parsed;
  for (const [keyId, key] of keys) {
    const expected = createHmac('sha1', key).update(body).digest();
    if (timingSafeEqual(expected, parsed.digest)) return { ok: true, keyId };
  }
  return { ok: false, reason: 'mismatch' };
}

/** The header value the platform would send for these bytes (tests, simulate, bench). */
export function signBody(body: Buffer | string, key: Buffer | string): string {
  return `${PREFIX}${createHmac('sha1', key).update(body).digest('hex')}`;
}
