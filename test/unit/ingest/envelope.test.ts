import { describe, expect, it } from 'vitest';
import { buildEnvelope, envelopeHeaders, queryString } from '../../../ingest/webhooks/envelope.js';

describe('envelope', () => {
  it('keeps the headers that describe the delivery, in lower case, and drops credentials and hop-by-hop ones', () => {
    expect(
      envelopeHeaders({
        'content-type': 'application/json',
        'user-agent': 'Platform-Webhooks/1.4.2',
        accept: '*/*',
        'x-signature': 'sha1=00',
        'x-request-id': 'r1',
        'x-forwarded-for': ['10.0.0.1', '10.0.0.2'],
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
      'x-signature': 'sha1=00',
      'x-request-id': 'r1',
      'x-forwarded-for': '10.0.0.1, 10.0.0.2',
    });
  });

  it('takes the query string without its question mark, or null', () => {
    expect(queryString('/webhooks/energy?tenant=7&x=%20')).toBe('tenant=7&x=%20');
    expect(queryString('/webhooks/energy')).toBeNull();
    expect(queryString('/webhooks/energy?')).toBeNull();
  });

  it('masks the value of every credential-looking query parameter, keeping the rest as sent', () => {
    expect(
      queryString(
        '/webhooks/energy?tenant=7&token=abc&api_key=k1&apiKey=k2&Secret=s&signature=f0&sig=f1&password=p&access%5Ftoken=t&x=%20',
      ),
    ).toBe(
      'tenant=7&token=***&api_key=***&apiKey=***&Secret=***&signature=***&sig=***&password=***&access%5Ftoken=***&x=%20',
    );
    expect(queryString('/webhooks/energy?flag&token')).toBe('flag&token');
    expect(queryString('/webhooks/energy?%E0%A4%A=1&designation=x')).toBe('%E0%A4%A=1&designation=x');
  });

  it('carries the body bytes as they are and the key id, never a key', () => {
    const body = Buffer.from(' {"webhook":{"id":"wh_1"}} ');
    const envelope = buildEnvelope({
      source: 'energy',
      body,
      headers: { 'content-type': 'text/plain' },
      url: '/webhooks/energy?a=1',
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
