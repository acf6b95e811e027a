// The login of hookledger's own broker connection, against a fake broker on a loopback port that speaks
// SaslHandshake v1 and SaslAuthenticate v1 (PLAIN) the way Kafka does. SCRAM's math has its own tests
// (scram.test.ts); the real SASL_SSL listener is exercised in test/integration/secured-cluster.test.ts.

import { createPublicKey, verify } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { BrokerAuthenticationError, openBrokerConnection } from '../../../runtime/kafka/broker-connection.js';
import {
  createSigningKey,
  startTokenEndpoint,
  type TokenEndpoint,
} from '../../../tools/stack/token-endpoint.js';

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

function i16(n: number) {
  const b = Buffer.alloc(2);
  b.writeInt16BE(n);
  return b;
}
function i32(n: number) {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
}
function str(s: string) {
  return Buffer.concat([i16(Buffer.byteLength(s)), Buffer.from(s)]);
}

/**
 * A broker that offers `mechanisms` and accepts PLAIN for user/password only, and OAUTHBEARER tokens that
 * `tokenAccepted` accepts.
 */
async function saslBroker(
  mechanisms: string[],
  seen: string[] = [],
  tokenAccepted: (token: string) => boolean = () => false,
) {
  const sockets: Socket[] = [];
  const server = createServer((socket) => {
    sockets.push(socket);
    let received = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      while (received.length >= 4 && received.length >= 4 + received.readInt32BE(0)) {
        const size = received.readInt32BE(0);
        const request = received.subarray(4, 4 + size);
        received = received.subarray(4 + size);
        const apiKey = request.readInt16BE(0);
        const correlationId = request.readInt32BE(4);
        const clientIdLength = request.readInt16BE(8);
        const body = request.subarray(10 + clientIdLength);
        let answer: Buffer;
        if (apiKey === 17) {
          const mechanism = body.toString('utf8', 2, 2 + body.readInt16BE(0));
          seen.push(`handshake ${mechanism}`);
          const code = mechanisms.includes(mechanism) ? 0 : 33;
          answer = Buffer.concat([
            i32(correlationId),
            i16(code),
            i32(mechanisms.length),
            ...mechanisms.map(str),
          ]);
        } else {
          const auth = body.subarray(4, 4 + body.readInt32BE(0)).toString('utf8');
          seen.push(`authenticate ${JSON.stringify(auth)}`);
          const [gs2, bearer] = auth.split('\u0001');
          if (gs2 === 'n,,' && bearer?.startsWith('auth=Bearer ')) {
            // RFC 7628: a refused token is answered with a JSON challenge and no error yet.
            const token = bearer.slice('auth=Bearer '.length);
            const challenge = tokenAccepted(token) ? '' : '{"status":"invalid_token"}';
            answer = Buffer.concat([
              i32(correlationId),
              i16(0),
              i16(-1),
              i32(Buffer.byteLength(challenge)),
              Buffer.from(challenge),
              Buffer.alloc(8),
            ]);
            socket.write(Buffer.concat([i32(answer.length), answer]));
            continue;
          }
          const ok = auth === '\u0000user\u0000password';
          answer = Buffer.concat([
            i32(correlationId),
            i16(ok ? 0 : 58),
            ok ? i16(-1) : str('Authentication failed: Invalid username or password'),
            i32(0),
            Buffer.alloc(8),
          ]);
        }
        socket.write(Buffer.concat([i32(answer.length), answer]));
      }
    });
  });
  server.on('close', () => {
    for (const s of sockets) s.destroy();
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as { port: number }).port, seen };
}

const open = (port: number, password: string, mechanism: 'PLAIN' | 'SCRAM-SHA-512' = 'PLAIN') =>
  openBrokerConnection({
    host: '127.0.0.1',
    port,
    clientId: 'test',
    timeoutMs: 2_000,
    security: { sasl: { mechanism, username: 'user', password } },
  });

describe('logging in on a SASL listener', () => {
  it('hands over the connection once the broker accepts the credentials', async () => {
    const broker = await saslBroker(['PLAIN']);
    const connection = await open(broker.port, 'password');
    connection.close();
    expect(broker.seen).toEqual(['handshake PLAIN', 'authenticate "\\u0000user\\u0000password"']);
  });

  it('says the credentials were refused, with the broker’s reason and what to check', async () => {
    const broker = await saslBroker(['PLAIN']);
    const attempt = open(broker.port, 'wrong');
    await expect(attempt).rejects.toBeInstanceOf(BrokerAuthenticationError);
    await expect(attempt).rejects.toThrow(
      'SASL PLAIN as "user": Authentication failed: Invalid username or password (check KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD)',
    );
  });

  it('says which mechanisms the listener offers when ours is not among them', async () => {
    const broker = await saslBroker(['SCRAM-SHA-256']);
    await expect(open(broker.port, 'password', 'SCRAM-SHA-512')).rejects.toThrow(
      'SASL SCRAM-SHA-512 as "user": the listener does not offer SCRAM-SHA-512 (it offers SCRAM-SHA-256): check KAFKA_SASL_MECHANISM',
    );
  });
});

describe('logging in with OAUTHBEARER', () => {
  const issuer = { issuer: 'test-issuer', audience: 'kafka', keyId: 'k1' };
  const signingKey = createSigningKey('k1');
  const publicKey = createPublicKey(signingKey.privateKeyPem);
  /** The broker's check: a JWT signed with the endpoint's key. */
  const signedByEndpoint = (token: string) => {
    const [header, payload, signature] = token.split('.');
    return verify(
      'RSA-SHA256',
      Buffer.from(`${header}.${payload}`),
      publicKey,
      Buffer.from(signature!, 'base64url'),
    );
  };
  const endpoints: TokenEndpoint[] = [];
  afterEach(async () => {
    await Promise.all(endpoints.splice(0).map((e) => e.close()));
  });
  const endpoint = async (key = signingKey) => {
    const started = await startTokenEndpoint({ signingKey: key, issuer, clients: { app: 'secret' } });
    endpoints.push(started);
    return started;
  };
  const openWith = (port: number, tokenUrl: string, clientSecret = 'secret') =>
    openBrokerConnection({
      host: '127.0.0.1',
      port,
      clientId: 'test',
      timeoutMs: 2_000,
      security: { sasl: { mechanism: 'OAUTHBEARER', oauth: { tokenUrl, clientId: 'app', clientSecret } } },
    });

  it('fetches a token from the endpoint and hands it to the broker', async () => {
    const seen: string[] = [];
    const broker = await saslBroker(['OAUTHBEARER'], seen, signedByEndpoint);
    const tokens = await endpoint();
    const connection = await openWith(broker.port, tokens.url);
    connection.close();
    expect(tokens.issued()).toBe(1);
    expect(seen[0]).toBe('handshake OAUTHBEARER');
    expect(seen[1]).toMatch(/^authenticate "n,,\\u0001auth=Bearer [\w-]+\.[\w-]+\.[\w-]+\\u0001\\u0001"$/);
  });

  it('says the endpoint refused the client, naming the variables, before asking the broker anything', async () => {
    const seen: string[] = [];
    const broker = await saslBroker(['OAUTHBEARER'], seen, signedByEndpoint);
    const tokens = await endpoint();
    const attempt = openWith(broker.port, tokens.url, 'wrong');
    await expect(attempt).rejects.toBeInstanceOf(BrokerAuthenticationError);
    await expect(attempt).rejects.toThrow(
      `SASL OAUTHBEARER as client "app": the token endpoint ${tokens.url} answered 401 (invalid_client: unknown client or wrong secret) without a token (check KAFKA_SASL_OAUTHBEARER_CLIENT_ID and KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET)`,
    );
    expect(seen).toEqual([]);
  });

  it('says the broker refused the token, with its reason, after concluding the exchange', async () => {
    const seen: string[] = [];
    const broker = await saslBroker(['OAUTHBEARER'], seen, signedByEndpoint);
    const stranger = await endpoint(createSigningKey('k1'));
    const attempt = openWith(broker.port, stranger.url);
    await expect(attempt).rejects.toBeInstanceOf(BrokerAuthenticationError);
    await expect(attempt).rejects.toThrow(/the broker refused the token/);
    // The lone ^A that ends a refused exchange (RFC 7628 §3.2.2), answered with the failure.
    expect(seen.at(-1)).toBe('authenticate "\\u0001"');
  });

  it('says the endpoint does not answer, naming it', async () => {
    const broker = await saslBroker(['OAUTHBEARER']);
    const nowhere = `http://127.0.0.1:${broker.port + 1}/token`;
    await expect(openWith(broker.port, nowhere)).rejects.toThrow(
      `OAUTHBEARER: the token endpoint ${nowhere} did not answer (ECONNREFUSED)`,
    );
  });
});
