import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../runtime/config.js';
import { type RegistryConfig, registryAccess } from '../../../schemas/registry-access.js';
import { createSerde } from '../../../schemas/serde.js';
import { CERTIFICATE_PEM } from '../kafka/pem-fixtures.js';

const read = (path: string) => {
  if (path === '/etc/registry/ca.pem') return Buffer.from(CERTIFICATE_PEM);
  if (path === '/etc/registry/not-pem') return Buffer.from('nope');
  throw Object.assign(new Error('missing'), { code: 'ENOENT' });
};

function errorOf(config: RegistryConfig): string {
  try {
    registryAccess(config, read);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('expected a ConfigError');
}

describe('how to reach the schema registry', () => {
  it('carries basic auth, a bearer token or a CA from the variables', () => {
    expect(
      registryAccess(
        {
          SCHEMA_REGISTRY_URL: 'https://r',
          SCHEMA_REGISTRY_USERNAME: 'key',
          SCHEMA_REGISTRY_PASSWORD: 'secret',
        },
        read,
      ),
    ).toEqual({ registryUrl: 'https://r', auth: { username: 'key', password: 'secret' } });
    expect(
      registryAccess({ SCHEMA_REGISTRY_URL: 'https://r', SCHEMA_REGISTRY_BEARER_TOKEN: 't0k' }, read),
    ).toEqual({
      registryUrl: 'https://r',
      bearerToken: 't0k',
    });
    expect(
      registryAccess(
        { SCHEMA_REGISTRY_URL: 'https://r', SCHEMA_REGISTRY_CA_FILE: '/etc/registry/ca.pem' },
        read,
      ).ca?.toString(),
    ).toBe(CERTIFICATE_PEM);
  });

  it('is lookup-only when SCHEMA_REGISTRY_AUTO_REGISTER is false (by default it registers)', () => {
    const url = 'http://r';
    expect(registryAccess({ SCHEMA_REGISTRY_URL: url, SCHEMA_REGISTRY_AUTO_REGISTER: false })).toEqual({
      registryUrl: url,
      autoRegister: false,
    });
    expect(registryAccess({ SCHEMA_REGISTRY_URL: url, SCHEMA_REGISTRY_AUTO_REGISTER: true })).toEqual({
      registryUrl: url,
    });
    const config = loadConfig({ KAFKA_BROKERS: 'k:9092', SCHEMA_REGISTRY_URL: url });
    expect(config.SCHEMA_REGISTRY_AUTO_REGISTER).toBe(true);
  });

  it('refuses half a login, two logins, or a CA that cannot be used, in one line', () => {
    expect(errorOf({ SCHEMA_REGISTRY_URL: 'https://r', SCHEMA_REGISTRY_USERNAME: 'key' })).toMatch(
      /^SCHEMA_REGISTRY_PASSWORD: /,
    );
    expect(
      errorOf({
        SCHEMA_REGISTRY_URL: 'https://r',
        SCHEMA_REGISTRY_USERNAME: 'key',
        SCHEMA_REGISTRY_PASSWORD: 'secret',
        SCHEMA_REGISTRY_BEARER_TOKEN: 't0k',
      }),
    ).toMatch(/^SCHEMA_REGISTRY_BEARER_TOKEN: set either/);
    expect(
      errorOf({ SCHEMA_REGISTRY_URL: 'http://r', SCHEMA_REGISTRY_CA_FILE: '/etc/registry/ca.pem' }),
    ).toMatch(/^SCHEMA_REGISTRY_CA_FILE: set, but SCHEMA_REGISTRY_URL is not https/);
    expect(
      errorOf({ SCHEMA_REGISTRY_URL: 'https://r', SCHEMA_REGISTRY_CA_FILE: '/etc/registry/not-pem' }),
    ).toBe('SCHEMA_REGISTRY_CA_FILE: "/etc/registry/not-pem" holds no PEM certificate');
  });
});

describe('the serde sends the credentials on every request', () => {
  const servers: Server[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
  });

  /** An HTTP endpoint that answers every request as a registry with one subject would, and keeps the headers. */
  async function endpoint(seen: IncomingHttpHeaders[]): Promise<string> {
    const server = createServer((request, response) => {
      seen.push(request.headers);
      response.setHeader('content-type', 'application/vnd.schemaregistry.v1+json');
      response.end(JSON.stringify({ subject: 's', version: 1, id: 7, schema: '"string"' }));
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  }

  it('basic auth', async () => {
    const seen: IncomingHttpHeaders[] = [];
    const serde = createSerde({
      registryUrl: await endpoint(seen),
      auth: { username: 'key', password: 'secret' },
    });
    expect(await serde.latestSchemaId('s')).toBe(7);
    expect(seen[0]?.authorization).toBe(`Basic ${Buffer.from('key:secret').toString('base64')}`);
  });

  it('a bearer token', async () => {
    const seen: IncomingHttpHeaders[] = [];
    const serde = createSerde({ registryUrl: await endpoint(seen), bearerToken: 't0k' });
    expect(await serde.latestSchemaId('s')).toBe(7);
    expect(seen[0]?.authorization).toBe('Bearer t0k');
  });
});
