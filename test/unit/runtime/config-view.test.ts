// What a service logs as it starts: its version and effective configuration, secrets redacted.
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../runtime/config.js';
import { effectiveConfig, logStartConfig } from '../../../runtime/config-view.js';
import { createLogger } from '../../../runtime/log.js';
import { VERSION } from '../../../runtime/version.js';

const env = {
  KAFKA_BROKERS: 'a:9092,b:9092',
  SCHEMA_REGISTRY_URL: 'https://registry.example',
  SCHEMA_REGISTRY_BEARER_TOKEN: 'tok3n',
  KAFKA_SASL_PASSWORD: 'hunter2',
  WEBHOOK_DATE_ZONE: '-05:30',
  INGEST_DEADLINE_MS: '12000',
};

describe('the effective configuration', () => {
  it('shows values after defaults, durations as durations, secrets and URL passwords redacted', () => {
    const view = effectiveConfig(loadConfig(env));
    expect(view).toMatchObject({
      KAFKA_BROKERS: 'a:9092,b:9092',
      SCHEMA_REGISTRY_URL: 'https://registry.example',
      SCHEMA_REGISTRY_BEARER_TOKEN: '[redacted]',
      KAFKA_SASL_PASSWORD: '[redacted]',
      WEBHOOK_DATE_ZONE: '-05:30',
      INGEST_DEADLINE_MS: '12s',
      DEDUPE_WINDOW: '7d',
    });
    expect(JSON.stringify(view)).not.toMatch(/hunter2|tok3n/);
    // What it prints reads back as the same configuration.
    expect(loadConfig(view)).toEqual(
      loadConfig({ ...env, SCHEMA_REGISTRY_BEARER_TOKEN: '[redacted]', KAFKA_SASL_PASSWORD: '[redacted]' }),
    );
  });

  it('takes a login written into SCHEMA_REGISTRY_URL apart: the URL keeps none, and shows none', () => {
    const config = loadConfig({
      KAFKA_BROKERS: 'a:9092',
      SCHEMA_REGISTRY_URL: 'https://api%2Bkey:registry-secret@registry.example/apis/ccompat/v7',
    });
    expect(config.SCHEMA_REGISTRY_URL).toBe('https://registry.example/apis/ccompat/v7');
    expect(config.SCHEMA_REGISTRY_USERNAME).toBe('api+key');
    expect(config.SCHEMA_REGISTRY_PASSWORD).toBe('registry-secret');
    expect(JSON.stringify(effectiveConfig(config))).not.toMatch(/registry-secret/);
  });

  it('is logged at start with the version, and a misspelled variable is warned about', () => {
    const lines: Record<string, unknown>[] = [];
    const logger = createLogger({
      name: 'test',
      destination: { write: (line: string) => lines.push(JSON.parse(line)) },
    });
    logStartConfig(logger, loadConfig(env), { ...env, INGEST_DEADLIN_MS: '5s' });
    expect(lines[0]).toMatchObject({ msg: 'configuration', version: VERSION });
    expect((lines[0]!.config as Record<string, string>).KAFKA_SASL_PASSWORD).toBe('[redacted]');
    expect(lines[1]).toMatchObject({
      level: 40,
      msg: 'INGEST_DEADLIN_MS is not a hookledger variable (did you mean INGEST_DEADLINE_MS?): ignored',
    });
    expect(JSON.stringify(lines)).not.toMatch(/hunter2|tok3n|registry-secret/);
  });

  it("warns once to rename the project's old name for the sources, never showing its value", () => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = createLogger({
      level: 'info',
      name: 'test',
      destination: { write: (line: string) => lines.push(JSON.parse(line)) },
    });
    logStartConfig(logger, loadConfig(env), { ...env, HOOKSTREAM_SOURCES: '{"e":{"keys":{"k":"s3cret"}}}' });
    const warnings = lines.filter((line) => line.level === 40);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.msg).toBe(
      'HOOKSTREAM_SOURCES is the old name of HOOKLEDGER_SOURCES: read as HOOKLEDGER_SOURCES for now, rename it',
    );
    expect(JSON.stringify(lines)).not.toContain('s3cret');
  });
});
