// The refusals and edge cases over real HTTP, against the real broker and registry: what is stored and what is not.
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signBody } from '../../ingest/webhooks/signature.js';
import { testStack } from '../helpers/stack.js';
import {
  createRawTopic,
  type IngestUnderTest,
  type RawRecordRead,
  randomPrefix,
  readRaw,
  runIngest,
} from './ingest-harness.js';

const KEY = 'edges-shared-key-0123456789abcdef0123456789';
const LIMIT = 1_048_576;
const body = (id: string, pad = 0) =>
  JSON.stringify({
    webhook: { id, trigger: 'UserAdded', date: '2026-11-20T10:00:00Z' },
    pad: 'x'.repeat(pad),
  });
/** A body of exactly `size` bytes. */
const sized = (id: string, size: number) => body(id, size - Buffer.byteLength(body(id)));
const hex = (bytes: string, key = KEY) => createHmac('sha1', key).update(bytes).digest('hex');

describe('ingest refusals and edge cases', () => {
  const stack = testStack();
  const prefix = randomPrefix('edges');
  let ingest: IngestUnderTest;
  let records: RawRecordRead[] = [];
  const statuses = new Map<string, number>();
  const retryAfter = new Map<string, string | null>();
  const answers = new Map<string, string>();

  const send = async (name: string, path: string, payload: string, headers: Record<string, string>) => {
    const response = await ingest.post(path, payload, headers);
    statuses.set(name, response.status);
    retryAfter.set(name, response.headers.get('retry-after'));
    answers.set(name, await response.text());
  };

  beforeAll(async () => {
    await createRawTopic(stack.brokers, prefix, LIMIT);
    ingest = await runIngest({
      ...stack,
      prefix,
      sources: { energy: { keys: { k1: KEY } }, sandbox: { signature: 'none' } },
      env: { INGEST_KEPT_QUERY_PARAMETERS: 'tenant' },
    });
    const json = { 'content-type': 'application/json' };
    const b = body('wh_sig');
    await send('missing', '/webhooks/energy', b, json);
    await send('sha256', '/webhooks/energy', b, { ...json, 'x-signature': `sha256=${hex(b)}` });
    await send('short', '/webhooks/energy', b, { ...json, 'x-signature': `sha1=${hex(b).slice(2)}` });
    await send('long', '/webhooks/energy', b, { ...json, 'x-signature': `sha1=${hex(b)}ab` });
    await send('non-hex', '/webhooks/energy', b, {
      ...json,
      'x-signature': `sha1=${hex(b).replace(/.$/, 'q')}`,
    });
    await send('other-bytes', '/webhooks/energy', b, { ...json, 'x-signature': `sha1=${hex(`${b}\n`)}` });
    await send('other-key', '/webhooks/energy', b, { ...json, 'x-signature': `sha1=${hex(b, 'nope')}` });
    await send('upper-hex', '/webhooks/energy', body('wh_upper'), {
      ...json,
      'x-signature': `sha1=${hex(body('wh_upper')).toUpperCase()}`,
    });
    const under = sized('wh_under', LIMIT - 1);
    await send('under-limit', '/webhooks/energy', under, { ...json, 'x-signature': signBody(under, KEY) });
    const over = sized('wh_over', LIMIT + 1);
    await send('over-limit', '/webhooks/energy', over, { ...json, 'x-signature': signBody(over, KEY) });
    const anyBody = body('wh_unknown');
    await send('unknown-source', '/webhooks/nope', anyBody, {
      ...json,
      'x-signature': signBody(anyBody, KEY),
    });
    await send('insecure', '/webhooks/sandbox?tenant=t1&pass=hunter2', body('wh_insecure'), json);
    const form = 'a=1&b=2';
    await send('form', '/webhooks/energy', form, {
      'content-type': 'application/x-www-form-urlencoded',
      'x-signature': signBody(form, KEY),
    });
    const slashed = body('wh_slash');
    await send('trailing-slash', '/webhooks/energy/?tenant=t2&pass=hunter2', slashed, {
      ...json,
      'x-signature': signBody(slashed, KEY),
    });
    await send('trailing-slash-forged', '/webhooks/energy/', body('wh_slash_forged'), {
      ...json,
      'x-signature': signBody(body('wh_slash_forged'), 'not-the-key'),
    });
    await send('trailing-slash-unknown', '/webhooks/nope/', anyBody, {
      ...json,
      'x-signature': signBody(anyBody, KEY),
    });
    // An id and a trigger no platform sends, in a body at the limit: copied into the record as they are,
    // they made it larger than raw takes (503 on every retry, the delivery lost).
    const huge = JSON.stringify({
      webhook: {
        id: `wh_huge_${'i'.repeat(40_000)}`,
        trigger: 'T'.repeat(2_000),
        date: '2026-11-20T10:00:00Z',
      },
      pad: '',
    });
    const hugeBody = huge.replace('"pad":""', `"pad":"${'x'.repeat(LIMIT - Buffer.byteLength(huge))}"`);
    await send('huge-id', '/webhooks/energy', hugeBody, { ...json, 'x-signature': signBody(hugeBody, KEY) });
    const xml = '<webhook id="wh_xml"/>';
    await send('xml', '/webhooks/energy', xml, {
      'content-type': 'application/xml',
      'x-signature': signBody(xml, KEY),
    });
    records = await readRaw(stack.brokers, stack.registryUrl, ingest.rawTopic);
  });

  afterAll(async () => {
    await ingest?.close();
  });

  it.each(['missing', 'sha256', 'short', 'long', 'non-hex', 'other-bytes', 'other-key'])(
    'refuses a %s signature with 401',
    (name) => {
      expect(statuses.get(name)).toBe(401);
    },
  );

  it('stores nothing for a refused signature', () => {
    expect(records.filter((r) => r.key === 'wh_sig')).toEqual([]);
  });

  it('accepts the digest in upper-case hex', () => {
    expect(statuses.get('upper-hex')).toBe(200);
  });

  it('stores a body one byte under the limit, whole, and refuses one byte over with 413', () => {
    expect(statuses.get('under-limit')).toBe(200);
    const under = records.find((r) => r.key === 'wh_under')!;
    expect(under.envelope.body.length).toBe(LIMIT - 1);
    expect(statuses.get('over-limit')).toBe(413);
    expect(records.some((r) => r.key === 'wh_over')).toBe(false);
  });

  it('answers an unknown source 404 with its own error, and stores nothing', () => {
    expect(statuses.get('unknown-source')).toBe(404);
    expect(JSON.parse(answers.get('unknown-source')!)).toEqual({
      code: 'INGEST_ERR_UNKNOWN_SOURCE',
      message: 'Unknown source',
    });
    expect(records.some((r) => r.key === 'wh_unknown')).toBe(false);
  });

  it('stores an unsigned delivery to an insecure source, with its query string (values masked but the kept ones) and no key id', () => {
    expect(statuses.get('insecure')).toBe(200);
    expect(records.find((r) => r.key === 'wh_insecure')!.envelope).toMatchObject({
      source: 'sandbox',
      verifiedKeyId: null,
      query: 'tenant=t1&pass=***',
    });
  });

  it('takes the webhook URL with a trailing slash as the same webhook: stored alike, refused alike', () => {
    expect(statuses.get('trailing-slash')).toBe(200);
    expect(records.find((r) => r.key === 'wh_slash')!.envelope).toMatchObject({
      webhookId: 'wh_slash',
      source: 'energy',
      verifiedKeyId: 'k1',
      query: 'tenant=t2&pass=***',
    });
    expect(statuses.get('trailing-slash-forged')).toBe(401);
    expect(records.some((r) => r.key === 'wh_slash_forged')).toBe(false);
    expect(statuses.get('trailing-slash-unknown')).toBe(404);
  });

  it('stores non-JSON content types as raw bytes keyed by their digest (no 415)', () => {
    expect(statuses.get('form')).toBe(200);
    expect(statuses.get('xml')).toBe(200);
    const xml = records.find((r) => Buffer.from(r.envelope.body).toString() === '<webhook id="wh_xml"/>')!;
    expect(xml.key).toMatch(/^sha1:[0-9a-f]{40}$/);
    expect(xml.envelope.headers['content-type']).toBe('application/xml');
  });

  it('stores a body at the limit with a 40 KB id, keyed by its digest and without its 2 KB trigger', () => {
    expect(statuses.get('huge-id')).toBe(200);
    const stored = records.find((r) => Buffer.from(r.envelope.body).includes('"id":"wh_huge_'))!;
    expect(stored.envelope.body.length).toBe(LIMIT);
    expect(stored.key).toMatch(/^sha1:[0-9a-f]{40}$/);
    expect(stored.envelope).toMatchObject({
      webhookId: stored.key,
      trigger: null,
      webhookDate: '2026-11-20T10:00:00Z',
    });
  });

  it('holds exactly the accepted deliveries', () => {
    expect(records).toHaveLength([...statuses.values()].filter((s) => s === 200).length);
  });
});
