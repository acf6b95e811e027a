import { describe, expect, it } from 'vitest';
import {
  ConfigError,
  checkConfig,
  DURATION_VARIABLES,
  loadConfig,
  problemLine,
} from '../../../runtime/config.js';
import { formatDuration, parseDuration } from '../../../runtime/duration.js';

const minimal = { KAFKA_BROKERS: '127.0.0.1:9092', SCHEMA_REGISTRY_URL: 'http://127.0.0.1:8081' };

function errorOf(env: NodeJS.ProcessEnv): string {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('expected a ConfigError');
}

describe("the registry's URL", () => {
  it('is http or https, and a login in it is never shown in a problem', () => {
    expect(errorOf({ ...minimal, SCHEMA_REGISTRY_URL: 'ftp://registry:8081' })).toMatch(
      /^SCHEMA_REGISTRY_URL: expected the http\(s\) URL/,
    );
    expect(errorOf({ ...minimal, SCHEMA_REGISTRY_URL: 'file:///etc/passwd' })).toMatch(
      /^SCHEMA_REGISTRY_URL:/,
    );
    const invalid = errorOf({ ...minimal, SCHEMA_REGISTRY_URL: 'https://key:TOPSECRET@reg istry' });
    expect(invalid).toContain('https://key:[redacted]@reg istry');
    expect(invalid).not.toContain('TOPSECRET');
  });

  it('holds a login, or SCHEMA_REGISTRY_USERNAME does, not both', () => {
    const both = errorOf({
      ...minimal,
      SCHEMA_REGISTRY_URL: 'https://key:TOPSECRET@registry',
      SCHEMA_REGISTRY_USERNAME: 'other',
      SCHEMA_REGISTRY_PASSWORD: 'other-secret',
    });
    expect(both).toMatch(/^SCHEMA_REGISTRY_URL: holds a login, and SCHEMA_REGISTRY_USERNAME is set too/);
    expect(both).not.toContain('TOPSECRET');
  });
});

describe('configuration from the environment', () => {
  it('fills every default from the two required variables', () => {
    const config = loadConfig(minimal);
    expect(config.KAFKA_BROKERS).toEqual(['127.0.0.1:9092']);
    expect(config.DEDUPE_WINDOW).toBe(7 * 86_400_000);
    expect(config.INGEST_BODY_LIMIT).toBe(1_048_576);
    expect(config.INGEST_DEADLINE_MS).toBe(10_000);
    expect(config.TOPIC_PREFIX).toBe('');
    expect(config.HOOKLEDGER_LOCAL_STACK).toBe(false);
  });

  it('splits a broker list and trims its entries', () => {
    expect(loadConfig({ ...minimal, KAFKA_BROKERS: 'a:1, b:2' }).KAFKA_BROKERS).toEqual(['a:1', 'b:2']);
  });

  it('names the missing variable in one line', () => {
    const message = errorOf({ SCHEMA_REGISTRY_URL: 'http://x' });
    expect(message).toMatch(/^KAFKA_BROKERS: .*it is not set/);
    expect(message).not.toContain('\n');
  });

  it('names a bad value and shows what it got', () => {
    expect(errorOf({ ...minimal, INGEST_PORT: 'eighty' })).toMatch(/^INGEST_PORT: .*got "eighty"/);
    expect(errorOf({ ...minimal, KAFKA_BROKERS: 'no-port' })).toMatch(/^KAFKA_BROKERS: expected host:port/);
  });

  it('takes a session timeout down to 1 s (what the brokers allow is theirs to say) and up to 5 min', () => {
    expect(loadConfig(minimal).PROCESSOR_SESSION_TIMEOUT_MS).toBe(30_000);
    expect(loadConfig({ ...minimal, PROCESSOR_SESSION_TIMEOUT_MS: '3s' }).PROCESSOR_SESSION_TIMEOUT_MS).toBe(
      3_000,
    );
    expect(
      loadConfig({ ...minimal, PROCESSOR_SESSION_TIMEOUT_MS: '1000' }).PROCESSOR_SESSION_TIMEOUT_MS,
    ).toBe(1_000);
    expect(errorOf({ ...minimal, PROCESSOR_SESSION_TIMEOUT_MS: '999ms' })).toMatch(
      /^PROCESSOR_SESSION_TIMEOUT_MS: must be at least 1s/,
    );
    expect(errorOf({ ...minimal, PROCESSOR_SESSION_TIMEOUT_MS: '6m' })).toMatch(
      /^PROCESSOR_SESSION_TIMEOUT_MS: must be at most 5m/,
    );
  });

  it('commits live transactions every 25 ms by default, from 5 ms up to a quarter of the transaction timeout', () => {
    expect(loadConfig(minimal).PROCESSOR_COMMIT_INTERVAL_MS).toBe(25);
    expect(
      loadConfig({ ...minimal, PROCESSOR_COMMIT_INTERVAL_MS: '100ms' }).PROCESSOR_COMMIT_INTERVAL_MS,
    ).toBe(100);
    expect(errorOf({ ...minimal, PROCESSOR_COMMIT_INTERVAL_MS: '1ms' })).toMatch(
      /^PROCESSOR_COMMIT_INTERVAL_MS: must be at least 5ms/,
    );
    expect(errorOf({ ...minimal, PROCESSOR_COMMIT_INTERVAL_MS: '3s' })).toBe(
      'PROCESSOR_COMMIT_INTERVAL_MS: must be at most a quarter of PROCESSOR_TRANSACTION_TIMEOUT_MS (10s) (got "3s")',
    );
    expect(
      loadConfig({ ...minimal, PROCESSOR_COMMIT_INTERVAL_MS: '3s', PROCESSOR_TRANSACTION_TIMEOUT_MS: '12s' })
        .PROCESSOR_COMMIT_INTERVAL_MS,
    ).toBe(3_000);
  });

  it("refuses a dedupe window shorter than the platform's 72 h of retries", () => {
    expect(errorOf({ ...minimal, DEDUPE_WINDOW: '48h' })).toMatch(/^DEDUPE_WINDOW: must be at least .*72h/);
    expect(
      loadConfig({ ...minimal, DEDUPE_WINDOW: '72h', WEBHOOK_MAX_AGE: '72h', WEBHOOK_MAX_AHEAD: '0s' })
        .DEDUPE_WINDOW,
    ).toBe(72 * 3_600_000);
  });

  it('refuses a window shorter than a retry can be accepted: the age limit after a date ahead of receipt', () => {
    // Dated 5 minutes ahead of its receipt, a delivery's retries are accepted until 72h05m after that receipt:
    // a window of 72h would forget the id 5 minutes before its last retry is accepted, and route it again.
    expect(errorOf({ ...minimal, DEDUPE_WINDOW: '72h', WEBHOOK_MAX_AGE: '72h' })).toMatch(
      /^DEDUPE_WINDOW: must be at least WEBHOOK_MAX_AGE \+ WEBHOOK_MAX_AHEAD \(3d \+ 5m = 4325m\)/,
    );
    expect(loadConfig({ ...minimal, DEDUPE_WINDOW: '4325m', WEBHOOK_MAX_AGE: '72h' }).DEDUPE_WINDOW).toBe(
      72 * 3_600_000 + 5 * 60_000,
    );
  });

  it('bounds a delivery by its age: 72 h of retries plus 1 h by default, never under 72 h nor over the dedupe window', () => {
    const config = loadConfig(minimal);
    expect(config.WEBHOOK_MAX_AGE).toBe(73 * 3_600_000);
    expect(config.WEBHOOK_MAX_AHEAD).toBe(5 * 60_000);
    expect(errorOf({ ...minimal, WEBHOOK_MAX_AGE: '24h' })).toMatch(
      /^WEBHOOK_MAX_AGE: must be at least .*72h/,
    );
    // The window must cover the age limit, or a replay after the window would be routed again.
    expect(errorOf({ ...minimal, DEDUPE_WINDOW: '72h' })).toMatch(
      /^DEDUPE_WINDOW: must be at least WEBHOOK_MAX_AGE \+ WEBHOOK_MAX_AHEAD \(73h \+ 5m/,
    );
    expect(errorOf({ ...minimal, WEBHOOK_MAX_AGE: '8d' })).toMatch(
      /^DEDUPE_WINDOW: must be at least WEBHOOK_MAX_AGE \+ WEBHOOK_MAX_AHEAD \(8d \+ 5m/,
    );
  });

  it('keeps processor state in memory by default; on disk it needs a directory', () => {
    expect(loadConfig(minimal).PROCESSOR_STATE_STORE).toBe('memory');
    expect(errorOf({ ...minimal, PROCESSOR_STATE_STORE: 'lmdb' })).toMatch(
      /^PROCESSOR_STATE_DIR: is required with PROCESSOR_STATE_STORE=lmdb/,
    );
    expect(errorOf({ ...minimal, PROCESSOR_STATE_STORE: 'rocksdb' })).toMatch(/^PROCESSOR_STATE_STORE: /);
    const onDisk = loadConfig({
      ...minimal,
      PROCESSOR_STATE_STORE: 'lmdb',
      PROCESSOR_STATE_DIR: '/var/lib/hookledger',
    });
    expect(onDisk.PROCESSOR_STATE_DIR).toBe('/var/lib/hookledger');
  });

  it('keeps standby replicas only with the state on disk, and one at most', () => {
    expect(loadConfig(minimal).PROCESSOR_STANDBY_REPLICAS).toBe(0);
    expect(errorOf({ ...minimal, PROCESSOR_STANDBY_REPLICAS: '1' })).toMatch(
      /^PROCESSOR_STANDBY_REPLICAS: needs PROCESSOR_STATE_STORE=lmdb/,
    );
    const onDisk = { ...minimal, PROCESSOR_STATE_STORE: 'lmdb', PROCESSOR_STATE_DIR: '/var/lib/hookledger' };
    expect(loadConfig({ ...onDisk, PROCESSOR_STANDBY_REPLICAS: '1' }).PROCESSOR_STANDBY_REPLICAS).toBe(1);
    expect(errorOf({ ...onDisk, PROCESSOR_STANDBY_REPLICAS: '2' })).toMatch(/^PROCESSOR_STANDBY_REPLICAS: /);
  });

  it('serves operations on the loopback by default, on a port of their own', () => {
    const config = loadConfig(minimal);
    expect(config.INGEST_OPS_HOST).toBe('127.0.0.1');
    expect(config.INGEST_OPS_PORT).toBe(9091);
    expect(config.INGEST_PORT).not.toBe(config.INGEST_OPS_PORT);
  });

  it('refuses a deadline that the platform would time out before', () => {
    expect(errorOf({ ...minimal, INGEST_DEADLINE_MS: '30000' })).toMatch(/^INGEST_DEADLINE_MS: /);
    // The platform's 30 s start before the headers are in (up to 5 s), the deadline after them.
    expect(errorOf({ ...minimal, INGEST_DEADLINE_MS: '25s' })).toMatch(
      /^INGEST_DEADLINE_MS: must stay under the platform's 30 s timeout, which starts before the request's headers are in \(up to 5 s\)/,
    );
    expect(loadConfig({ ...minimal, INGEST_DEADLINE_MS: '24s' }).INGEST_DEADLINE_MS).toBe(24_000);
  });

  it('refuses a deadline no write can meet: within its batch’s linger and a round trip to Kafka', () => {
    // Before, 1 ms was taken: librdkafka refused the producer (message.timeout.ms not above linger.ms) and
    // ingest never got ready.
    expect(errorOf({ ...minimal, INGEST_DEADLINE_MS: '1' })).toBe(
      'INGEST_DEADLINE_MS: must be at least INGEST_LINGER_MS + 100 ms (102 ms): a request waits that long for its batch, then for Kafka\'s acknowledgement (got "1")',
    );
    expect(errorOf({ ...minimal, INGEST_DEADLINE_MS: '500', INGEST_LINGER_MS: '450' })).toMatch(
      /^INGEST_DEADLINE_MS: must be at least INGEST_LINGER_MS \+ 100 ms \(550 ms\)/,
    );
    expect(loadConfig({ ...minimal, INGEST_DEADLINE_MS: '102' }).INGEST_DEADLINE_MS).toBe(102);
  });

  it('reads WEBHOOK_DATE_ZONE as minutes east of UTC, and leaves it unset by default', () => {
    expect(loadConfig(minimal).WEBHOOK_DATE_ZONE).toBeUndefined();
    const zone = (value: string) => loadConfig({ ...minimal, WEBHOOK_DATE_ZONE: value }).WEBHOOK_DATE_ZONE;
    expect(zone('UTC')).toBe(0);
    expect(zone('utc')).toBe(0);
    expect(zone('Z')).toBe(0);
    expect(zone('+01:00')).toBe(60);
    expect(zone('-05:30')).toBe(-330);
    expect(zone('+0545')).toBe(345);
    expect(zone('+14:00')).toBe(840);
  });

  it('refuses a WEBHOOK_DATE_ZONE that is no fixed offset, in one line', () => {
    for (const bad of ['Europe/Berlin', 'local', '+1', '+01:60', '+15:00', '-13:00']) {
      const message = errorOf({ ...minimal, WEBHOOK_DATE_ZONE: bad });
      expect(message).toMatch(/^WEBHOOK_DATE_ZONE: expected UTC or an offset such as \+01:00/);
      expect(message).toContain(`got "${bad}"`);
      expect(message).not.toContain('\n');
    }
  });

  it('treats an empty variable as unset', () => {
    expect(loadConfig({ ...minimal, TOPIC_PREFIX: '' }).TOPIC_PREFIX).toBe('');
  });
});

describe('durations', () => {
  it('reads the units people write', () => {
    expect(parseDuration('250ms')).toBe(250);
    expect(parseDuration('10s')).toBe(10_000);
    expect(parseDuration('72h')).toBe(259_200_000);
    expect(parseDuration('7d')).toBe(604_800_000);
    expect(parseDuration('1.5h')).toBe(5_400_000);
  });

  it('rejects what is not a duration', () => {
    expect(parseDuration('7')).toBeUndefined();
    expect(parseDuration('7 days')).toBeUndefined();
    expect(parseDuration('')).toBeUndefined();
  });

  it('prints the shortest exact unit', () => {
    expect(formatDuration(259_200_000)).toBe('3d');
    expect(formatDuration(5_400_000)).toBe('90m');
    expect(formatDuration(1_500)).toBe('1500ms');
  });
});

describe('one duration syntax for every duration variable', () => {
  const durations = [
    'DEDUPE_WINDOW',
    'QUARANTINE_RETENTION',
    'INGEST_DEADLINE_MS',
    'INGEST_LINGER_MS',
    'PROCESSOR_SESSION_TIMEOUT_MS',
    'PROCESSOR_TRANSACTION_TIMEOUT_MS',
    'PROCESSOR_COMMIT_INTERVAL_MS',
    'SCHEMA_REGISTRY_TIMEOUT',
    'INGEST_DRAIN_DELAY_MS',
    'INGEST_REQUEST_TIMEOUT_MS',
    'INGEST_KEEP_ALIVE_TIMEOUT_MS',
    'WEBHOOK_MAX_AGE',
    'WEBHOOK_MAX_AHEAD',
    'ENRICH_TIMEOUT',
    'ENRICH_BACKOFF',
    'ENRICH_RETRY_BUDGET',
    'ENRICH_BREAKER_COOLDOWN',
  ] as const;

  it('is exactly the list config print formats as durations', () => {
    expect([...DURATION_VARIABLES].sort()).toEqual([...durations].sort());
  });

  it('takes 250ms, 10s, 5m, 72h and 7d, and a bare number of milliseconds (the *_MS variables’ old form)', () => {
    expect(loadConfig({ ...minimal, INGEST_DEADLINE_MS: '5s' }).INGEST_DEADLINE_MS).toBe(5_000);
    expect(loadConfig({ ...minimal, INGEST_DEADLINE_MS: '5000' }).INGEST_DEADLINE_MS).toBe(5_000);
    expect(loadConfig({ ...minimal, INGEST_LINGER_MS: '250ms' }).INGEST_LINGER_MS).toBe(250);
    expect(loadConfig({ ...minimal, INGEST_LINGER_MS: '0' }).INGEST_LINGER_MS).toBe(0);
    expect(loadConfig({ ...minimal, PROCESSOR_SESSION_TIMEOUT_MS: '1m' }).PROCESSOR_SESSION_TIMEOUT_MS).toBe(
      60_000,
    );
    expect(
      loadConfig({ ...minimal, PROCESSOR_TRANSACTION_TIMEOUT_MS: '15s' }).PROCESSOR_TRANSACTION_TIMEOUT_MS,
    ).toBe(15_000);
    expect(loadConfig({ ...minimal, DEDUPE_WINDOW: '7d' }).DEDUPE_WINDOW).toBe(604_800_000);
    expect(loadConfig({ ...minimal, QUARANTINE_RETENTION: '72h' }).QUARANTINE_RETENTION).toBe(259_200_000);
  });

  it('says the bounds as durations and refuses what is no duration', () => {
    expect(errorOf({ ...minimal, PROCESSOR_SESSION_TIMEOUT_MS: '500ms' })).toBe(
      'PROCESSOR_SESSION_TIMEOUT_MS: must be at least 1s (got "500ms")',
    );
    expect(errorOf({ ...minimal, INGEST_LINGER_MS: '2s' })).toBe(
      'INGEST_LINGER_MS: must be at most 1s (got "2s")',
    );
    expect(errorOf({ ...minimal, INGEST_DEADLINE_MS: 'soon' })).toMatch(
      /^INGEST_DEADLINE_MS: expected a duration such as 10s \(got "soon"\)$/,
    );
  });
});

describe('every problem at once (config check)', () => {
  it('lists one problem per variable, secrets never shown, the first also being what loadConfig throws', () => {
    const env = {
      KAFKA_BROKERS: 'nohost',
      DEDUPE_WINDOW: '1d',
      KAFKA_SASL_MECHANISM: 'MAGIC',
      KAFKA_SASL_PASSWORD_FILE: '/nonexistent/secret',
    };
    const { config, problems } = checkConfig(env);
    expect(config).toBeUndefined();
    expect(problems.map((p) => p.variable)).toEqual([
      'KAFKA_SASL_PASSWORD_FILE',
      'KAFKA_BROKERS',
      'SCHEMA_REGISTRY_URL',
      'KAFKA_SASL_MECHANISM',
      'DEDUPE_WINDOW',
    ]);
    expect(problems.map(problemLine)[2]).toBe(
      'SCHEMA_REGISTRY_URL: expected the http(s) URL of a Confluent-API schema registry (it is not set)',
    );
    expect(errorOf(env)).toBe(problemLine(problems[0]!));
  });

  it('is the configuration when there is none', () => {
    expect(checkConfig(minimal)).toMatchObject({ problems: [], config: { INGEST_PORT: 8080 } });
  });
});
