// The login of hookledger's own broker connection, against a fake broker on a loopback port that speaks
// SaslHandshake v1 and SaslAuthenticate v1 (PLAIN) the way Kafka does. SCRAM's math has its own tests
// (scram.test.ts); the real SASL_SSL listener is exercised in test/integration/secured-cluster.test.ts.
import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { BrokerAuthenticationError, openBrokerConnection } from '../../../runtime/kafka/broker-connection.js';

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

/** A broker that offers `mechanisms` and accepts PLAIN for user/password only. */
async function saslBroker(mechanisms: string[], seen: string[] = []) {
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
