import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseSignatureHeader, signBody, verifySignature } from '../../../ingest/webhooks/signature.js';

const body = Buffer.from('{"webhook":{"id":"wh_1"}}');
const keys = new Map([
  ['k1', Buffer.from('first-key')],
  ['k2', Buffer.from('second-key')],
]);
const hex = (key: string, bytes: Buffer = body) => createHmac('sha1', key).update(bytes).digest('hex');

describe('signature', () => {
  it('accepts sha1=<hex> of the raw bytes and names the key that matched', () => {
    expect(verifySignature(body, `sha1=${hex('first-key')}`, keys)).toEqual({ ok: true, keyId: 'k1' });
  });

  it('accepts any active key, so keys rotate without downtime', () => {
    expect(verifySignature(body, `sha1=${hex('second-key')}`, keys)).toEqual({ ok: true, keyId: 'k2' });
  });

  it('accepts the hex digest in upper case', () => {
    expect(verifySignature(body, `sha1=${hex('first-key').toUpperCase()}`, keys)).toMatchObject({ ok: true });
  });

  it('matches what signBody produces (the platform side)', () => {
    expect(signBody(body, 'first-key')).toBe(`sha1=${hex('first-key')}`);
  });

  it.each([
    ['a missing header', undefined, 'missing'],
    ['an empty header', '', 'missing'],
    ['another algorithm', `sha256=${hex('first-key')}`, 'algorithm'],
    ['md5 with a sha1-length digest', `md5=${hex('first-key')}`, 'algorithm'],
    ['no prefix', hex('first-key'), 'malformed'],
    ['a digest one character short', `sha1=${hex('first-key').slice(1)}`, 'malformed'],
    ['a digest one character long', `sha1=${hex('first-key')}0`, 'malformed'],
    ['an empty digest', 'sha1=', 'malformed'],
    ['non-hex characters', `sha1=${'z'.repeat(40)}`, 'malformed'],
    ['a base64 digest', `sha1=${createHmac('sha1', 'first-key').update(body).digest('base64')}`, 'malformed'],
    ['two different headers', [`sha1=${hex('first-key')}`, `sha1=${hex('second-key')}`], 'malformed'],
    [
      'two different headers joined by Node',
      `sha1=${hex('first-key')}, sha1=${hex('second-key')}`,
      'malformed',
    ],
    ['the same wrong signature twice', `sha1=${hex('not-a-key')}, sha1=${hex('not-a-key')}`, 'mismatch'],
    ['a signature of other bytes', `sha1=${hex('first-key', Buffer.from(`${body} `))}`, 'mismatch'],
    ['a signature with an unknown key', `sha1=${hex('not-a-key')}`, 'mismatch'],
  ])('refuses %s', (_name, header, reason) => {
    expect(verifySignature(body, header as string | string[] | undefined, keys)).toEqual({
      ok: false,
      reason,
    });
  });

  it('accepts the same signature given twice (a proxy that repeats the header), as Node joins it or as an array', () => {
    const one = `sha1=${hex('first-key')}`;
    expect(verifySignature(body, `${one}, ${one}`, keys)).toEqual({ ok: true, keyId: 'k1' });
    expect(verifySignature(body, [one, one], keys)).toEqual({ ok: true, keyId: 'k1' });
  });

  it('never matches a re-serialized body (whitespace and order matter)', () => {
    const reserialized = Buffer.from(JSON.stringify(JSON.parse(' { "webhook" : { "id" : "wh_1" } } ')));
    const original = Buffer.from(' { "webhook" : { "id" : "wh_1" } } ');
    expect(verifySignature(reserialized, signBody(original, 'first-key'), keys)).toEqual({
      ok: false,
      reason: 'mismatch',
    });
  });

  it('parses the header into the digest bytes', () => {
    const parsed = parseSignatureHeader(`sha1=${hex('first-key')}`);
    expect(parsed.ok && parsed.digest.length).toBe(20);
  });
});
