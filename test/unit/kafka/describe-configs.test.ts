import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  BrokersUnreachableError,
  DescribeConfigsError,
  describeConfigs,
  parseAddress,
  RESOURCE_TYPE,
  UnsupportedSecurityError,
} from '../../../runtime/kafka/describe-configs.js';
import {
  brokerConfigsResponse,
  describeConfigsResponse,
  i32,
  topicConfigsResponse,
} from './describe-configs-fixtures.js';

/** What a fake broker saw of one request: its header, as the client sent it. */
interface Seen {
  apiKey: number;
  version: number;
  correlationId: number;
}

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

/**
 * A broker on a loopback port that answers each request frame with `answer(correlationId)`, or does
 * nothing when `answer` returns undefined.
 */
async function fakeBroker(answer: (correlationId: number) => Buffer | undefined, seen: Seen[] = []) {
  const sockets: Socket[] = [];
  const server = createServer((socket) => {
    sockets.push(socket);
    let received = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (received.length < 4 || received.length < 4 + received.readInt32BE(0)) return;
      const request = {
        apiKey: received.readInt16BE(4),
        version: received.readInt16BE(6),
        correlationId: received.readInt32BE(8),
      };
      seen.push(request);
      const payload = answer(request.correlationId);
      if (payload) socket.write(Buffer.concat([i32(payload.length), payload]));
    });
  });
  server.on('close', () => {
    for (const s of sockets) s.destroy();
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return { address: `127.0.0.1:${port}`, port, seen };
}

/** A port nothing listens on: connecting is refused. */
async function closedPort(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return `127.0.0.1:${port}`;
}

const topic = (name: string) => ({ type: RESOURCE_TYPE.TOPIC, name });

describe('describeConfigs', () => {
  it('asks the next bootstrap broker when one refuses the connection, and returns effective values', async () => {
    const broker = await fakeBroker((id) =>
      topicConfigsResponse(id, 't1', { 'cleanup.policy': 'delete', 'retention.ms': '-1' }),
    );

    const found = await describeConfigs([topic('t1')], {
      bootstrap: [await closedPort(), broker.address],
      clientId: 'test',
    });

    expect(found).toEqual([
      { type: 2, name: 't1', configs: { 'cleanup.policy': 'delete', 'retention.ms': '-1' } },
    ]);
    expect(broker.seen).toEqual([{ apiKey: 32, version: 1, correlationId: expect.any(Number) }]);
  });

  it('names every topic the broker refused, with the error, and leaves sensitive values out', async () => {
    const broker = await fakeBroker((id) => describeConfigsResponse(id));

    const error = await describeConfigs([topic('t1'), topic('gone')], {
      bootstrap: [broker.address],
      clientId: 'test',
    }).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(DescribeConfigsError);
    expect(error).toMatchObject({ code: 3, retriable: true });
    expect((error as Error).message).toBe(
      'cannot describe the configs of topic "gone": UNKNOWN_TOPIC_OR_PARTITION (Unknown topic)',
    );
  });

  it('gives up on a broker that does not answer within the timeout, naming each one tried', async () => {
    const silent = await fakeBroker(() => undefined);
    const refused = await closedPort();

    const error = await describeConfigs([topic('t1')], {
      bootstrap: [silent.address, refused],
      clientId: 'test',
      timeoutMs: 200,
    }).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(BrokersUnreachableError);
    expect((error as Error).message).toContain(`${silent.address}: no answer within 200 ms`);
    expect((error as Error).message).toContain(`${refused}: connect ECONNREFUSED`);
    expect((error as Error).cause).toBeInstanceOf(AggregateError);
  });

  it('does not take an answer to another request (a different correlation id)', async () => {
    const confused = await fakeBroker((id) => topicConfigsResponse(id + 1, 't1', {}));
    await expect(
      describeConfigs([topic('t1')], { bootstrap: [confused.address], clientId: 'test' }),
    ).rejects.toThrow(/correlation id/);
  });

  it('sends a broker resource to that broker, not to the bootstrap one', async () => {
    const bootstrap = await fakeBroker(() => undefined);
    const second = await fakeBroker((id) => brokerConfigsResponse(id, 2, { 'log.retention.hours': '168' }));

    const [found] = await describeConfigs([{ type: RESOURCE_TYPE.BROKER, name: '2' }], {
      bootstrap: [bootstrap.address],
      clientId: 'test',
      brokers: [
        { id: 1, host: '127.0.0.1', port: Number(bootstrap.address.split(':')[1]) },
        { id: 2, host: '127.0.0.1', port: second.port },
      ],
    });

    expect(found).toEqual({ type: 4, name: '2', configs: { 'log.retention.hours': '168' } });
    expect(bootstrap.seen).toEqual([]);
  });

  it('refuses a broker id the metadata does not list', async () => {
    await expect(
      describeConfigs([{ type: RESOURCE_TYPE.BROKER, name: '9' }], {
        bootstrap: ['127.0.0.1:1'],
        clientId: 'test',
        brokers: [{ id: 1, host: '127.0.0.1', port: 1 }],
      }),
    ).rejects.toThrow('broker 9 is not in the cluster metadata (brokers: 1)');
  });

  it('refuses a SASL mechanism it cannot log in with, before connecting anywhere', async () => {
    const broker = await fakeBroker((id) => topicConfigsResponse(id, 't1', {}));
    const attempt = describeConfigs([topic('t1')], {
      bootstrap: [broker.address],
      clientId: 'test',
      properties: { 'security.protocol': 'SASL_SSL', 'sasl.mechanism': 'GSSAPI' },
    });
    await expect(attempt).rejects.toBeInstanceOf(UnsupportedSecurityError);
    await expect(attempt).rejects.toThrow(
      /SASL GSSAPI: .*PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER \(OIDC\) only/,
    );
    // OAUTHBEARER without librdkafka's OIDC login (a token set by an application callback): nothing to fetch a token from.
    const unsecured = describeConfigs([topic('t1')], {
      bootstrap: [broker.address],
      clientId: 'test',
      properties: { 'security.protocol': 'SASL_SSL', 'sasl.mechanism': 'OAUTHBEARER' },
    });
    await expect(unsecured).rejects.toThrow(/SASL OAUTHBEARER: .*through an OIDC token endpoint only/);
    expect(broker.seen).toEqual([]);
    await expect(
      describeConfigs([topic('t1')], {
        bootstrap: [broker.address],
        clientId: 'test',
        properties: { 'security.protocol': 'plaintext' },
      }),
    ).resolves.toHaveLength(1);
  });
});

describe('parseAddress', () => {
  it('reads host:port, [v6]:port and librdkafka-style PROTOCOL://host:port', () => {
    expect(parseAddress('kafka-1:9092')).toEqual({ host: 'kafka-1', port: 9092 });
    expect(parseAddress('[::1]:19092')).toEqual({ host: '::1', port: 19092 });
    expect(parseAddress('PLAINTEXT://10.0.0.5:9092')).toEqual({ host: '10.0.0.5', port: 9092 });
    expect(() => parseAddress('kafka-1')).toThrow('broker address "kafka-1": expected host:port');
  });
});
