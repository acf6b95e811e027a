// The secured stack's token endpoint: what it signs (a JWT the broker's validator accepts: RS256, kid,
// iss, aud, sub, exp) and whom it refuses. On a loopback port, through the same fetch hookledger's own
// broker connection uses (runtime/kafka/oauth-token.ts).
import { createPrivateKey, createPublicKey, verify } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { fetchAccessToken, TokenRefusedError } from '../../../runtime/kafka/oauth-token.js';
import {
  answerTokenRequest,
  createSigningKey,
  jwks,
  startTokenEndpoint,
  type TokenEndpoint,
} from '../../../tools/stack/token-endpoint.js';

const issuer = { issuer: 'hookledger-local-stack', audience: 'kafka', keyId: 'key-1' };
const signingKey = createSigningKey('key-1');

function decode(token: string) {
  const [header, payload, signature] = token.split('.') as [string, string, string];
  const part = (text: string) => JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  return { header: part(header), payload: part(payload), signed: `${header}.${payload}`, signature };
}

const request = (authorization?: string) =>
  ({ headers: authorization ? { authorization } : {} }) as IncomingMessage;
const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

describe('answering a token request', () => {
  const options = {
    issuer,
    clients: { app: 's3cret' },
    key: createPrivateKey(signingKey.privateKeyPem),
    lifetimeSeconds: 600,
  };

  it('issues an RS256 JWT for the client, verifiable with the published key set', () => {
    const before = Math.floor(Date.now() / 1000);
    const answer = answerTokenRequest(
      options,
      request(basic('app', 's3cret')),
      'grant_type=client_credentials&scope=kafka',
    );
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ token_type: 'Bearer', expires_in: 600, scope: 'kafka' });
    const token = decode(answer.body.access_token as string);
    expect(token.header).toEqual({ alg: 'RS256', typ: 'JWT', kid: 'key-1' });
    expect(token.payload).toMatchObject({ iss: issuer.issuer, aud: 'kafka', sub: 'app', scope: 'kafka' });
    expect(token.payload.exp - token.payload.iat).toBe(600);
    expect(token.payload.iat).toBeGreaterThanOrEqual(before);
    const [published] = jwks(signingKey).keys;
    expect(published).toMatchObject({ kty: 'RSA', kid: 'key-1', alg: 'RS256', use: 'sig' });
    const fromJwks = createPublicKey({ key: published as never, format: 'jwk' });
    expect(
      verify('RSA-SHA256', Buffer.from(token.signed), fromJwks, Buffer.from(token.signature, 'base64url')),
    ).toBe(true);
  });

  it('takes the client from the form as well as from HTTP Basic', () => {
    const answer = answerTokenRequest(
      options,
      request(),
      'grant_type=client_credentials&client_id=app&client_secret=s3cret',
    );
    expect(answer.status).toBe(200);
  });

  it('refuses a wrong secret, an unknown client and a missing one with 401 invalid_client', () => {
    for (const [authorization, body] of [
      [basic('app', 'wrong'), 'grant_type=client_credentials'],
      [basic('other', 's3cret'), 'grant_type=client_credentials'],
      [undefined, 'grant_type=client_credentials'],
    ] as const) {
      const answer = answerTokenRequest(options, request(authorization), body);
      expect(answer.status).toBe(401);
      expect(answer.body.error).toBe('invalid_client');
    }
  });

  it('refuses any other grant with 400 unsupported_grant_type', () => {
    const answer = answerTokenRequest(options, request(basic('app', 's3cret')), 'grant_type=password');
    expect(answer).toMatchObject({ status: 400, body: { error: 'unsupported_grant_type' } });
  });
});

describe('the token endpoint over HTTP', () => {
  const started: TokenEndpoint[] = [];
  afterEach(async () => {
    await Promise.all(started.splice(0).map((e) => e.close()));
  });

  it('gives librdkafka-style clients a token, and says clearly when it will not', async () => {
    const endpoint = await startTokenEndpoint({ signingKey, issuer, clients: { app: 'a:b&c' } });
    started.push(endpoint);
    // A secret with characters that form-encoding changes (RFC 6749 §2.3.1).
    const token = await fetchAccessToken(
      { tokenUrl: endpoint.url, clientId: 'app', clientSecret: 'a:b&c' },
      2_000,
    );
    expect(decode(token).payload.sub).toBe('app');
    expect(endpoint.issued()).toBe(1);
    const refused = fetchAccessToken({ tokenUrl: endpoint.url, clientId: 'app', clientSecret: 'no' }, 2_000);
    await expect(refused).rejects.toBeInstanceOf(TokenRefusedError);
    await expect(refused).rejects.toThrow(`the token endpoint ${endpoint.url} answered 401 (invalid_client:`);
    const keySet = await (await fetch(new URL('jwks', endpoint.url))).json();
    expect(keySet).toEqual(jwks(signingKey));
  });
});
