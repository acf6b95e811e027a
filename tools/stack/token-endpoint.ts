// A small OAuth 2.0 token endpoint for the secured local stack: the client credentials grant (RFC 6749
// §4.4) issuing RS256 JSON Web Tokens that the stack's broker validates against its JWKS file (KIP-768).
// It stands in for the identity provider a production cluster trusts (Okta, Keycloak, Entra ID, Confluent
// Cloud's); the broker and librdkafka's OIDC login on both sides of it are the real ones.
import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject, sign } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** How the broker checks a token: the issuer and audience it expects, the key id it looks up. */
export interface TokenIssuer {
  issuer: string;
  audience: string;
  keyId: string;
}

export interface SigningKey {
  /** PKCS#8 PEM. */
  privateKeyPem: string;
  keyId: string;
}

/** A new RSA key to sign tokens with; its public half goes to the broker as a JWKS. */
export function createSigningKey(keyId: string): SigningKey {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), keyId };
}

/** The JSON Web Key Set (RFC 7517) holding the key's public half: what the broker verifies signatures with. */
export function jwks({ privateKeyPem, keyId }: SigningKey): { keys: Record<string, string>[] } {
  const jwk = createPublicKey(privateKeyPem).export({ format: 'jwk' }) as Record<string, string>;
  return { keys: [{ ...jwk, kid: keyId, alg: 'RS256', use: 'sig' }] };
}

const base64url = (value: Buffer | string) => Buffer.from(value).toString('base64url');

/** A signed JWT (RFC 7519) for `subject`, valid from now for `lifetimeSeconds`. */
export function signAccessToken(
  key: KeyObject,
  issuer: TokenIssuer,
  claims: { subject: string; scope?: string; lifetimeSeconds: number; now?: number },
): string {
  const iat = Math.floor((claims.now ?? Date.now()) / 1000);
  const header = base64url(JSON.stringify({ alg: 'RS256', typ: 'JWT', kid: issuer.keyId }));
  const payload = base64url(
    JSON.stringify({
      iss: issuer.issuer,
      aud: issuer.audience,
      sub: claims.subject,
      iat,
      nbf: iat,
      exp: iat + claims.lifetimeSeconds,
      ...(claims.scope === undefined ? {} : { scope: claims.scope }),
    }),
  );
  const signature = sign('RSA-SHA256', Buffer.from(`${header}.${payload}`), key);
  return `${header}.${payload}.${base64url(signature)}`;
}

export interface TokenEndpointOptions {
  signingKey: SigningKey;
  issuer: TokenIssuer;
  /** client_id → client_secret: who may ask for a token. */
  clients: Readonly<Record<string, string>>;
  /** Default 3600: an hour, like most providers. */
  lifetimeSeconds?: number;
  host?: string;
  /** 0 (default): any free port. */
  port?: number;
}

export interface TokenEndpoint {
  /** What KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL holds. */
  readonly url: string;
  /** Tokens issued so far: a test can tell that a client really logged in with one. */
  issued(): number;
  close(): Promise<void>;
}

type Answer = { status: number; body: Record<string, unknown>; headers?: Record<string, string> };

/** The client's id and secret: HTTP Basic (what librdkafka sends, RFC 6749 §2.3.1) or the form's fields. */
function clientCredentials(
  request: IncomingMessage,
  form: URLSearchParams,
): { id: string; secret: string } | undefined {
  const basic = /^Basic\s+(\S+)$/i.exec(request.headers.authorization ?? '');
  if (basic) {
    const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) return undefined;
    // RFC 6749 §2.3.1: both parts are form-urlencoded before they are joined.
    return {
      id: decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, ' ')),
      secret: decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, ' ')),
    };
  }
  const id = form.get('client_id');
  const secret = form.get('client_secret');
  return id === null || secret === null ? undefined : { id, secret };
}

/** The answer to one POST of the token request: pure but for the clock. */
export function answerTokenRequest(
  options: Pick<TokenEndpointOptions, 'issuer' | 'clients' | 'lifetimeSeconds'> & { key: KeyObject },
  request: IncomingMessage,
  body: string,
): Answer {
  const form = new URLSearchParams(body);
  if (form.get('grant_type') !== 'client_credentials')
    return { status: 400, body: { error: 'unsupported_grant_type' } };
  const client = clientCredentials(request, form);
  if (!client || options.clients[client.id] === undefined || options.clients[client.id] !== client.secret)
    return {
      status: 401,
      body: { error: 'invalid_client', error_description: 'unknown client or wrong secret' },
      headers: { 'www-authenticate': 'Basic realm="hookledger local stack"' },
    };
  const lifetimeSeconds = options.lifetimeSeconds ?? 3600;
  const scope = form.get('scope') ?? undefined;
  return {
    status: 200,
    body: {
      access_token: signAccessToken(options.key, options.issuer, {
        subject: client.id,
        lifetimeSeconds,
        ...(scope === undefined ? {} : { scope }),
      }),
      token_type: 'Bearer',
      expires_in: lifetimeSeconds,
      ...(scope === undefined ? {} : { scope }),
    },
  };
}

/** Serves POST /token (and GET /jwks for the curious) until closed. */
export async function startTokenEndpoint(options: TokenEndpointOptions): Promise<TokenEndpoint> {
  const key = createPrivateKey(options.signingKey.privateKeyPem);
  const keySet = jwks(options.signingKey);
  let issued = 0;
  const reply = (response: ServerResponse, { status, body, headers }: Answer) => {
    response.writeHead(status, {
      'content-type': 'application/json',
      'cache-control': 'no-store',
      ...headers,
    });
    response.end(JSON.stringify(body));
  };
  const server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0];
    if (request.method === 'GET' && path === '/jwks') return reply(response, { status: 200, body: keySet });
    if (path !== '/token') return reply(response, { status: 404, body: { error: 'not_found' } });
    if (request.method !== 'POST')
      return reply(response, { status: 405, body: { error: 'invalid_request' }, headers: { allow: 'POST' } });
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const answer = answerTokenRequest({ ...options, key }, request, Buffer.concat(chunks).toString('utf8'));
      if (answer.status === 200) issued += 1;
      reply(response, answer);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const { address, port } = server.address() as AddressInfo;
  return {
    url: `http://${address}:${port}/token`,
    issued: () => issued,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
