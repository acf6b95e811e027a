// Start-up failures as one line naming what to change: a port in use, an address, Kafka or the registry away.
import { createServer as createHttpServer } from 'node:http';
import { createServer, type Server } from 'node:net';
import { describe, expect, it } from 'vitest';
import { assertBrokersReachable, tcpProblem } from '../../../runtime/kafka/reachable.js';
import { assertPortFree, checkAll, listenFailure, StartupError } from '../../../runtime/startup-error.js';
import { assertRegistryReachable } from '../../../schemas/registry-reachable.js';

const target = { host: '0.0.0.0', port: 8080, hostVariable: 'INGEST_HOST', portVariable: 'INGEST_PORT' };

async function listening(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as { port: number }).port;
}

async function closedPort(): Promise<number> {
  const server = createServer();
  const port = await listening(server);
  await new Promise((r) => server.close(r));
  return port;
}

describe('start-up errors', () => {
  it("names the port and its variable for listen()'s refusals, and leaves other errors alone", () => {
    const inUse = Object.assign(new Error('listen EADDRINUSE'), { code: 'EADDRINUSE' });
    expect(listenFailure(inUse, target)).toEqual(new StartupError('port 8080 is in use (INGEST_PORT)'));
    const host = Object.assign(new Error('x'), { code: 'EADDRNOTAVAIL' });
    expect((listenFailure(host, target) as Error).message).toBe(
      '0.0.0.0 is not an address of this machine (INGEST_HOST)',
    );
    const bug = new TypeError('oops');
    expect(listenFailure(bug, target)).toBe(bug);
    expect(new StartupError('x').userFacing).toBe(true);
  });

  it('says a port is in use before anything listens on it', async () => {
    const held = createServer();
    const port = await listening(held);
    try {
      await expect(assertPortFree({ ...target, host: '127.0.0.1', port })).rejects.toThrow(
        `port ${port} is in use (INGEST_PORT)`,
      );
    } finally {
      await new Promise((r) => held.close(r));
    }
    await expect(assertPortFree({ ...target, host: '127.0.0.1', port })).resolves.toBeUndefined();
  });

  it("throws the first check's failure in the order given", async () => {
    const first = new StartupError('kafka');
    await expect(
      checkAll([Promise.resolve(), Promise.reject(first), Promise.reject(new Error('b'))]),
    ).rejects.toBe(first);
  });

  it('says at once that nothing listens where Kafka should be', async () => {
    const port = await closedPort();
    expect(await tcpProblem(`127.0.0.1:${port}`, 2_000)).toBe('connection refused');
    const began = Date.now();
    await expect(assertBrokersReachable([`127.0.0.1:${port}`])).rejects.toThrow(
      `Kafka at 127.0.0.1:${port} cannot be reached: connection refused (KAFKA_BROKERS)`,
    );
    expect(Date.now() - began).toBeLessThan(2_000);
  });

  it('says the registry cannot be reached, or that what answers is not a Confluent-API registry', async () => {
    const port = await closedPort();
    await expect(
      assertRegistryReachable({ registryUrl: `http://127.0.0.1:${port}/apis/ccompat/v7` }),
    ).rejects.toThrow(
      `schema registry at http://127.0.0.1:${port}/apis/ccompat/v7 cannot be reached: connection refused (SCHEMA_REGISTRY_URL)`,
    );
    const web = createHttpServer((_request, response) => response.writeHead(404).end());
    const webPort = await listening(web as unknown as Server);
    try {
      await expect(assertRegistryReachable({ registryUrl: `http://127.0.0.1:${webPort}` })).rejects.toThrow(
        'answered 404 to GET /subjects: is it a Confluent-API registry? (SCHEMA_REGISTRY_URL)',
      );
    } finally {
      await new Promise((r) => web.close(r));
    }
  });
});
