import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fetchPolicyOf, fetchSettingsOf } from '../../../processors/enrich/main.js';
import { ConfigError, loadConfig } from '../../../runtime/config.js';

const minimal = { KAFKA_BROKERS: '127.0.0.1:9092', SCHEMA_REGISTRY_URL: 'http://127.0.0.1:8081' };
const enabled = { ...minimal, ENRICH: 'true', ENRICH_ALLOWED_ENDPOINTS: 'https://api.platform.example' };

function errorOf(env: NodeJS.ProcessEnv): string {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('expected a ConfigError');
}

describe('the enrich configuration', () => {
  it("is off by default, with the contract's Full query and bounded retries", () => {
    const config = loadConfig(minimal);
    expect(config.ENRICH).toBe(false);
    expect(config.ENRICH_QUERY).toMatch(/getEnergySwitch\(id: \$id\)/);
    expect(fetchPolicyOf(config).fullPaths).toHaveLength(21);
    expect(fetchSettingsOf(config)).toMatchObject({
      timeoutMs: 2_000,
      retries: 4,
      budgetMs: 4_000,
      concurrency: 8,
    });
    expect(fetchSettingsOf(config).header).toBeUndefined();
  });

  it('reads the allow-list as origins, the triggers as a list, durations as durations', () => {
    const config = loadConfig({
      ...enabled,
      ENRICH_ALLOWED_ENDPOINTS: 'https://api.platform.example, http://127.0.0.1:4000/',
      ENRICH_TRIGGERS: 'EnergySwitchUpdated,EnergySwitchAdded',
      ENRICH_TIMEOUT: '1s',
    });
    expect([...config.ENRICH_ALLOWED_ENDPOINTS]).toEqual([
      'https://api.platform.example',
      'http://127.0.0.1:4000',
    ]);
    expect(config.ENRICH_TRIGGERS).toEqual(['EnergySwitchUpdated', 'EnergySwitchAdded']);
    expect(config.ENRICH_TIMEOUT).toBe(1_000);
  });

  it('sends credentials read from ENRICH_CREDENTIALS_FILE in the configured header and scheme', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'enrich-'));
    try {
      const file = path.join(dir, 'token');
      writeFileSync(file, 'abc123\n');
      const config = loadConfig({
        ...enabled,
        ENRICH_CREDENTIALS_FILE: file,
        ENRICH_AUTH_HEADER: 'X-Api-Key',
        ENRICH_AUTH_SCHEME: 'none',
      });
      expect(fetchSettingsOf(config).header).toEqual({ name: 'X-Api-Key', value: 'abc123' });
      const bearer = loadConfig({ ...enabled, ENRICH_CREDENTIALS_FILE: file });
      expect(fetchSettingsOf(bearer).header).toEqual({ name: 'Authorization', value: 'Bearer abc123' });
    } finally {
      // Tests leave nothing in /tmp.
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses, in one line naming the variable, what cannot work', () => {
    expect(errorOf({ ...minimal, ENRICH: 'true' })).toMatch(
      /^ENRICH_ALLOWED_ENDPOINTS: must name at least one origin/,
    );
    expect(
      errorOf({ ...enabled, ENRICH_ALLOWED_ENDPOINTS: 'https://api.platform.example/v1/graphql' }),
    ).toMatch(/^ENRICH_ALLOWED_ENDPOINTS: expected http\(s\) origins/);
    expect(errorOf({ ...enabled, ENRICH_ALLOWED_ENDPOINTS: 'ftp://x.example' })).toMatch(
      /^ENRICH_ALLOWED_ENDPOINTS:/,
    );
    expect(errorOf({ ...enabled, ENRICH_TRIGGERS: 'UserAdded' })).toMatch(
      /^ENRICH_TRIGGERS: expected EnergySwitch triggers/,
    );
    expect(errorOf({ ...enabled, ENRICH_QUERY: 'query { getEnergySwitch(id: 1) { id } }' })).toMatch(
      /^ENRICH_QUERY: expected a GraphQL query with an \$id/,
    );
    expect(
      errorOf({ ...enabled, ENRICH_QUERY: 'query ($id: ID!) { getEnergySwitch(id: $id) { id }' }),
    ).toMatch(/^ENRICH_QUERY: expected .* balanced braces/);
    expect(errorOf({ ...enabled, ENRICH_RETRY_BUDGET: '6s' })).toMatch(
      /^ENRICH_RETRY_BUDGET: must be under half of PROCESSOR_TRANSACTION_TIMEOUT_MS \(10s\)/,
    );
    expect(errorOf({ ...enabled, ENRICH_TIMEOUT: '5s' })).toMatch(
      /^ENRICH_TIMEOUT: must be at most ENRICH_RETRY_BUDGET/,
    );
    // Processors that do not enrich keep any transaction timeout (a fault test runs them with 5 s).
    expect(
      loadConfig({ ...minimal, PROCESSOR_TRANSACTION_TIMEOUT_MS: '5s' }).PROCESSOR_TRANSACTION_TIMEOUT_MS,
    ).toBe(5_000);
    expect(errorOf({ ...enabled, PROCESSOR_TRANSACTION_TIMEOUT_MS: '5s' })).toMatch(
      /^ENRICH_RETRY_BUDGET: must be under half of PROCESSOR_TRANSACTION_TIMEOUT_MS \(5s\)/,
    );
    expect(errorOf({ ...enabled, ENRICH_CONCURRENCY: '0' })).toMatch(
      /^ENRICH_CONCURRENCY: expected at least 1/,
    );
    expect(errorOf({ ...enabled, ENRICH_RATE_LIMIT: '0' })).toMatch(
      /^ENRICH_RATE_LIMIT: expected requests per second/,
    );
    // 8 requests at 1/s: the last waits 8 s for its turn, past the 4 s budget, on every read of its batch
    // (before, taken: the stage retried that batch for ever). 4/s is the least that starts 8 within 2 s.
    expect(errorOf({ ...enabled, ENRICH_RATE_LIMIT: '1' })).toMatch(
      /^ENRICH_RATE_LIMIT: must start ENRICH_CONCURRENCY \(8\) requests within half of ENRICH_RETRY_BUDGET \(4s\): above 4\/s/,
    );
    expect(
      loadConfig({ ...enabled, ENRICH_RATE_LIMIT: '1', ENRICH_CONCURRENCY: '1' }).ENRICH_RATE_LIMIT,
    ).toBe(1);
    expect(loadConfig({ ...enabled, ENRICH_RATE_LIMIT: '5' }).ENRICH_RATE_LIMIT).toBe(5);
    // Processors that do not enrich keep any rate.
    expect(loadConfig({ ...minimal, ENRICH_RATE_LIMIT: '1' }).ENRICH_RATE_LIMIT).toBe(1);
    for (const message of [
      errorOf({ ...minimal, ENRICH: 'true' }),
      errorOf({ ...enabled, ENRICH_TIMEOUT: 'soon' }),
    ])
      expect(message).not.toContain('\n');
  });

  it('a query the stage cannot read stops its start with one line', () => {
    const config = loadConfig({
      ...enabled,
      ENRICH_QUERY: 'query ($id: ID!) { getEnergySwitch(id: $id) { ...F } }',
    });
    expect(() => fetchPolicyOf(config)).toThrow(/^ENRICH_QUERY: named fragments are not supported/);
  });
});
