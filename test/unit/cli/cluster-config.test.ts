// A command that talks to Kafka checks that its brokers accept a connection, and that the registry
// answers, before any client starts.
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { StartupError } from '../../../runtime/startup-error.js';
import { clusterConfig } from '../../../tools/cli/cluster-config.js';

/** A port no one listens on (the registry's out-of-reach URLs use it too). */
const NOTHING_LISTENS = 1;

describe('the configuration of a command that talks to Kafka', () => {
  it('names KAFKA_BROKERS and the address when no broker accepts a connection', async () => {
    // Port 1: nothing listens there. A port freePort() found free could be taken meanwhile by a broker
    // another test file starts, and the command then reached a real Kafka (exit 1, seen once beside the
    // integration tests).
    const port = NOTHING_LISTENS;
    const env = {
      KAFKA_BROKERS: `127.0.0.1:${port}`,
      SCHEMA_REGISTRY_URL: 'http://127.0.0.1:1/apis/ccompat/v7',
    };
    const refused = clusterConfig(env);
    await expect(refused).rejects.toThrow(StartupError);
    await expect(refused).rejects.toThrow(
      `Kafka at 127.0.0.1:${port} cannot be reached: connection refused (KAFKA_BROKERS)`,
    );
  });

  it('is the validated configuration once a broker accepts one and the registry answers', async () => {
    const server = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    const registry = createHttpServer((_request, response) => response.end('[]'));
    await new Promise<void>((resolve) => registry.listen(0, '127.0.0.1', resolve));
    const registryPort = (registry.address() as { port: number }).port;
    try {
      const env = {
        KAFKA_BROKERS: `127.0.0.1:${port}`,
        SCHEMA_REGISTRY_URL: `http://127.0.0.1:${registryPort}/apis/ccompat/v7`,
        TOPIC_PREFIX: 'unit.',
      };
      const config = await clusterConfig(env);
      expect(config.KAFKA_BROKERS).toEqual([`127.0.0.1:${port}`]);
      expect(config.TOPIC_PREFIX).toBe('unit.');

      // A registry out of reach: one line naming it, unless the command does not need it (topics --dry-run).
      const noRegistry = { ...env, SCHEMA_REGISTRY_URL: 'http://127.0.0.1:1/apis/ccompat/v7' };
      await expect(clusterConfig(noRegistry)).rejects.toThrow(
        /^schema registry at http:\/\/127\.0\.0\.1:1\/apis\/ccompat\/v7 cannot be reached: .*\(SCHEMA_REGISTRY_URL\)$/,
      );
      await expect(clusterConfig(noRegistry, { registry: false })).resolves.toMatchObject({
        TOPIC_PREFIX: 'unit.',
      });
    } finally {
      await new Promise((resolve) => server.close(resolve));
      await new Promise((resolve) => registry.close(resolve));
    }
  });
});
