// docker-compose.yml cannot run on a machine without a Docker engine: this keeps it consistent with
// the configuration and the CLI, so it does not rot unseen.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { CONFIG_VARIABLES, loadConfig } from '../../runtime/config.js';

const root = path.resolve(import.meta.dirname, '../..');
const compose = parse(readFileSync(path.join(root, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<
    string,
    { build?: unknown; image?: string; command?: string[]; environment?: Record<string, unknown> }
  >;
};
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

  it('points the services at the Kafka and registry it starts', () => {
    const env = compose.services.ingest!.environment!;
    const kafka = String(env.KAFKA_BROKERS).split(':')[0]!;
    const registry = new URL(String(env.SCHEMA_REGISTRY_URL)).hostname;
    expect(compose.services[kafka]?.image).toMatch(/^apache\/kafka:3\.9/);
    expect(compose.services[registry]?.image).toMatch(/^apicurio\/apicurio-registry:3\.0/);
    expect(String(env.SCHEMA_REGISTRY_URL)).toMatch(/\/apis\/ccompat\/v7$/);
  });
});
