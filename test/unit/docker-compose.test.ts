// docker-compose.yml cannot run on a machine without a Docker engine: this keeps it consistent with
// the configuration and the CLI, so it does not rot unseen.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { weakKey } from '../../ingest/sources.js';
import { CONFIG_VARIABLES, loadConfig } from '../../runtime/config.js';
import { LOCAL_INDEX_MAX_BYTES } from '../../tools/stack/properties.js';

const root = path.resolve(import.meta.dirname, '../..');
const compose = parse(readFileSync(path.join(root, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, Service>;
  secrets?: Record<string, { file?: string }>;
};
interface Service {
  build?: unknown;
  image?: string;
  command?: string[];
  environment?: Record<string, unknown>;
  ports?: string[];
  read_only?: boolean;
  cap_drop?: string[];
  security_opt?: string[];
  mem_limit?: string;
  secrets?: string[];
}
const SOURCE_VARIABLES = ['HOOKLEDGER_SOURCES', 'HOOKLEDGER_SOURCES_FILE'];
const hookledgerServices = Object.entries(compose.services).filter(
  ([, service]) => service.build !== undefined,
);

describe('docker-compose.yml', () => {
  it('runs hookledger services built from this repository', () => {
    expect(hookledgerServices.map(([name]) => name)).toContain('ingest');
  });

  for (const [name, service] of hookledgerServices) {
    it(`${name}: runs a command the CLI has`, () => {
      const command = service.command?.[0];
      expect(command, 'a command').toBeDefined();
      expect(existsSync(path.join(root, 'tools/cli/commands', `${command}.ts`))).toBe(true);
    });

    it(`${name}: sets only variables hookledger reads, and a valid configuration`, () => {
      const env = Object.fromEntries(
        Object.entries(service.environment ?? {}).map(([key, value]) => [key, String(value)]),
      );
      const unknown = Object.keys(env).filter(
        (key) => !CONFIG_VARIABLES.includes(key) && !SOURCE_VARIABLES.includes(key),
      );
      expect(unknown).toEqual([]);
      expect(() => loadConfig(env)).not.toThrow();
    });
  }

  it("sizes the broker's segment indexes as the local stack does", () => {
    const env = compose.services.kafka!.environment!;
    expect(Number(env.KAFKA_LOG_INDEX_SIZE_MAX_BYTES)).toBe(LOCAL_INDEX_MAX_BYTES);
  });

  it('points the services at the Kafka and registry it starts', () => {
    const env = compose.services.ingest!.environment!;
    const kafka = String(env.KAFKA_BROKERS).split(':')[0]!;
    const registry = new URL(String(env.SCHEMA_REGISTRY_URL)).hostname;
    expect(compose.services[kafka]?.image).toMatch(/^apache\/kafka:3\.9/);
    expect(compose.services[registry]?.image).toMatch(/^apicurio\/apicurio-registry:3\.0/);
    expect(String(env.SCHEMA_REGISTRY_URL)).toMatch(/\/apis\/ccompat\/v7$/);
  });

  for (const [name, service] of hookledgerServices) {
    it(`${name}: runs with a read-only root, no capabilities, no privilege gain and a memory limit`, () => {
      expect(service.read_only).toBe(true);
      expect(service.cap_drop).toEqual(['ALL']);
      expect(service.security_opt).toContain('no-new-privileges:true');
      expect(service.mem_limit).toMatch(/^\d+[mg]$/);
    });

    it(`${name}: reads its sources from a mounted secret, never a key written in the file`, () => {
      const env = service.environment ?? {};
      expect(env.HOOKLEDGER_SOURCES).toBeUndefined();
      const file = String(env.HOOKLEDGER_SOURCES_FILE);
      const secret = service.secrets?.find((s) => file === `/run/secrets/${s}`);
      expect(secret, 'HOOKLEDGER_SOURCES_FILE names a mounted secret').toBeDefined();
      expect(compose.secrets?.[secret!]?.file).toBeDefined();
    });
  }

  for (const [name, service] of Object.entries(compose.services)) {
    it(`${name}: gains no privileges and has a memory limit`, () => {
      expect(service.security_opt).toContain('no-new-privileges:true');
      expect(service.mem_limit).toBeDefined();
    });
  }

  it('publishes only the webhook port to every interface; ops ports on the loopback, Kafka and the registry not at all', () => {
    expect(compose.services.registry!.ports).toBeUndefined();
    expect(compose.services.kafka!.ports).toBeUndefined();
    const published = Object.values(compose.services).flatMap((service) => service.ports ?? []);
    const open = published.filter((port) => !port.startsWith('127.0.0.1:'));
    expect(open).toEqual([`${compose.services.ingest!.environment!.INGEST_PORT}:8080`]);
  });

  it('writes no key a running ingest would refuse (the old `change-me` placeholder)', () => {
    const text = readFileSync(path.join(root, 'docker-compose.yml'), 'utf8');
    expect(text).not.toMatch(/"keys"\s*:\s*\{/);
    expect(weakKey('change-me')).toBeDefined();
  });
});
