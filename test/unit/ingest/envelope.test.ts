import { describe, expect, it } from 'vitest';
import {
  buildEnvelope,
  envelopeHeaders,
  MAX_HEADER_VALUE_CHARS,
  queryString,
} from '../../../ingest/webhooks/envelope.js';

describe('envelope', () => {
  it('keeps only the allow-listed headers: never the signature, credentials, tracing or hop-by-hop ones', () => {
    expect(
      envelopeHeaders({
        'content-type': 'application/json',
        'user-agent': 'Platform-Webhooks/1.4.2',
        accept: '*/*',
        'x-signature': 'sha1=00',
        'x-request-id': 'r1',
        'x-forwarded-for': ['10.0.0.1', '10.0.0.2'],
        'x-access-key': 'secret',
        authorization: 'Bearer secret',
        cookie: 'a=b',
        'x-api-key': 'secret',
        'x-auth-token': 'secret',
        connection: 'keep-alive',
        'transfer-encoding': 'chunked',
        host: 'ingest.example',
      }),
    ).toEqual({
      'content-type': 'application/json',
      'user-agent': 'Platform-Webhooks/1.4.2',
      accept: '*/*',
    });
  });

  it('cuts a kept header value to its bound', () => {
    const headers = envelopeHeaders({ 'user-agent': 'u'.repeat(100_000) });
    expect(headers['user-agent']).toHaveLength(MAX_HEADER_VALUE_CHARS);
  });

  it('takes the query string without its question mark, or null', () => {
    expect(queryString('/webhooks/energy?tenant=7&x=%20', new Set(['tenant', 'x']))).toBe('tenant=7&x=%20');
    expect(queryString('/webhooks/energy')).toBeNull();
    expect(queryString('/webhooks/energy?')).toBeNull();
  });

  it('masks every query value but those of the allow-listed names, keeping names and order', () => {
    expect(
      queryString(
        '/webhooks/energy?tenant=7&token=abc&pass=p&api_key=k1&Secret=s&signature=f0&access%5Ftoken=t&x=%20',
        new Set(['tenant']),
      ),
    ).toBe('tenant=7&token=***&pass=***&api_key=***&Secret=***&signature=***&access%5Ftoken=***&x=***');
    expect(queryString('/webhooks/energy?Tenant=7&pass=p')).toBe('Tenant=***&pass=***');
    expect(queryString('/webhooks/energy?%74enant=7', new Set(['tenant']))).toBe('%74enant=7');
    // Without a value, the name may be the secret (a bare token): masked whole, unless allow-listed.
    expect(queryString('/webhooks/energy?flag&s3cr3t-t0ken', new Set(['flag']))).toBe('flag&***');
    expect(queryString('/webhooks/energy?%E0%A4%A=1&designation=x')).toBe('%E0%A4%A=***&designation=***');
  });

  it('keeps empty parameters and values empty, so the stored query is at most twice the URL’s', () => {
    expect(queryString('/webhooks/energy?a=&&b&c=1&')).toBe('a=&&***&c=***&');
    // The longest URL Node takes (16 KiB with the headers) of empty parameters: stored as sent, not 4×.
    const empty = '&'.repeat(16_300);
    expect(queryString(`/webhooks/energy?${empty}`)).toBe(empty);
    const bare = 'a&'.repeat(8_150);
    expect(queryString(`/webhooks/energy?${bare}`)!.length).toBeLessThanOrEqual(2 * bare.length);
  });

  it('carries the body bytes as they are and the key id, never a key', () => {
    const body = Buffer.from(' {"webhook":{"id":"wh_1"}} ');
    const envelope = buildEnvelope({
      source: 'energy',
      body,
      headers: { 'content-type': 'text/plain' },
      query: 'a=1',
      extracted: { webhookId: 'wh_1', fromBody: true, trigger: 'UserAdded', webhookDate: null },
      verifiedKeyId: 'k1',
      receivedAt: 1_700_000_000_000,
      ingestId: 'id-1',
    });
    expect(envelope).toEqual({
      webhookId: 'wh_1',
      source: 'energy',
      trigger: 'UserAdded',
      webhookDate: null,
      receivedAt: 1_700_000_000_000,
      body,
      headers: { 'content-type': 'text/plain' },
      query: 'a=1',
      verifiedKeyId: 'k1',
      ingestId: 'id-1',
    });
  });
});
