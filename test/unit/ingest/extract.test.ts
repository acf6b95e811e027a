import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { digestKey, extract } from '../../../ingest/webhooks/extract.js';
import { parseBody } from '../../../processors/dedupe-router/parse-body.js';

const fixture = (name: string) => readFileSync(new URL(`../../fixtures/${name}`, import.meta.url));
const sha1 = (bytes: Buffer | string) => `sha1:${createHash('sha1').update(bytes).digest('hex')}`;

describe('extract', () => {
  it('reads webhook id, trigger and date as sent', () => {
    expect(extract(fixture('00-energy-switch-added-full.body'))).toEqual({
      webhookId: 'wh_0001',
      fromBody: true,
      trigger: 'EnergySwitchAdded',
      webhookDate: '2026-11-20T10:15:30.123Z',
    });
  });

  it('keys a body without an id by the digest of its bytes, keeping trigger and date', () => {
    const body = fixture('15-signed-without-webhook-id.body');
    expect(extract(body)).toEqual({
      webhookId: sha1(body),
      fromBody: false,
      trigger: 'UserAdded',
      webhookDate: '2026-11-20T15:10:00Z',
    });
  });

  it('keys a body that does not parse by the digest of its bytes', () => {
    const body = fixture('16-signed-unparseable-json.body');
    expect(extract(body)).toEqual({
      webhookId: sha1(body),
      fromBody: false,
      trigger: null,
      webhookDate: null,
    });
  });

  it.each([
    ['an empty body', ''],
    ['a JSON array', '[1,2]'],
    ['a JSON string', '"wh_1"'],
    ['webhook null', '{"webhook":null}'],
    ['an empty id', '{"webhook":{"id":""}}'],
    ['an object id', '{"webhook":{"id":{"x":1}}}'],
    ['a boolean id', '{"webhook":{"id":true}}'],
  ])('falls back to the digest for %s', (_name, text) => {
    expect(extract(Buffer.from(text)).webhookId).toBe(sha1(text));
  });

  it('keeps the exact text of a numeric id', () => {
    expect(extract(Buffer.from('{"webhook":{"id":12345678901234567890}}')).webhookId).toBe(
      '12345678901234567890',
    );
  });

  it('ignores a trigger or date that is not a string', () => {
    expect(extract(Buffer.from('{"webhook":{"id":"a","trigger":1,"date":{}}}'))).toMatchObject({
      trigger: null,
      webhookDate: null,
    });
  });

  it('digests the bytes, not a decoding of them', () => {
    const bytes = Buffer.from([0xff, 0xfe, 0x00]);
    expect(digestKey(bytes)).toBe(sha1(bytes));
  });

  it('reads the id of a body that starts with a UTF-8 byte order mark, as the router does', () => {
    const body = Buffer.concat([
      Buffer.from([0xef, 0xbb, 0xbf]),
      fixture('00-energy-switch-added-full.body'),
    ]);
    expect(extract(body)).toMatchObject({ webhookId: 'wh_0001', fromBody: true });
  });

  it('keys a body that is not UTF-8 by its digest, as the router refuses it as not JSON', () => {
    const body = Buffer.concat([
      Buffer.from('{"webhook":{"id":"wh_'),
      Buffer.from([0xff]),
      Buffer.from('"}}'),
    ]);
    expect(extract(body)).toMatchObject({ webhookId: sha1(body), fromBody: false });
    expect(parseBody(body)).toMatchObject({ ok: false, reason: 'body-not-json' });
  });
});

// Ingest keys each record by the id it reads; the router dead-letters a record whose key is not the id
// it reads itself (webhook-id-mismatch). Both must read every body alike.
describe('ingest and the router read the same webhook id', () => {
  const bom = Buffer.from([0xef, 0xbb, 0xbf]);
  const bodies: Record<string, Buffer> = {
    'a plain body': fixture('00-energy-switch-added-full.body'),
    'a body after a byte order mark': Buffer.concat([bom, fixture('00-energy-switch-added-full.body')]),
    'a compact body after a byte order mark': Buffer.concat([
      bom,
      Buffer.from('{"webhook":{"id":"wh_bom"}}'),
    ]),
    'a body with white space first': Buffer.from(' \n\t{"webhook":{"id":"wh_ws"}}'),
    'an id with escapes': Buffer.from('{"webhook":{"id":"wh_\\u00e9"}}'),
  };
  for (const [name, body] of Object.entries(bodies)) {
    it(name, () => {
      const parsed = parseBody(body);
      expect(parsed.ok).toBe(true);
      const routerId = parsed.ok ? (parsed.value.webhook as { id: string }).id : undefined;
      expect(extract(body)).toMatchObject({ webhookId: routerId, fromBody: true });
    });
  }
});
