import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../runtime/config.js';
import { resolveSecretFiles } from '../../../runtime/secret-files.js';

const files: Record<string, string> = { '/run/secrets/kafka': 's3cret\n', '/run/secrets/empty': '\n' };
const read = (path: string) => {
  const text = files[path];
  if (text === undefined) throw Object.assign(new Error('missing'), { code: 'ENOENT' });
  return text;
};

describe('secrets mounted as files', () => {
  it('reads <NAME>_FILE into <NAME>, without the trailing newline', () => {
    const env = resolveSecretFiles({ KAFKA_SASL_PASSWORD_FILE: '/run/secrets/kafka' }, read);
    expect(env.KAFKA_SASL_PASSWORD).toBe('s3cret');
    expect(env.KAFKA_SASL_PASSWORD_FILE).toBeUndefined();
  });

  it('refuses both <NAME> and <NAME>_FILE, an unreadable file and an empty one, naming the variable', () => {
    expect(() =>
      resolveSecretFiles({ KAFKA_SASL_PASSWORD: 'x', KAFKA_SASL_PASSWORD_FILE: '/run/secrets/kafka' }, read),
    ).toThrow(
      'KAFKA_SASL_PASSWORD_FILE: set either KAFKA_SASL_PASSWORD or KAFKA_SASL_PASSWORD_FILE, not both',
    );
    expect(() => resolveSecretFiles({ SCHEMA_REGISTRY_PASSWORD_FILE: '/nope' }, read)).toThrow(
      'SCHEMA_REGISTRY_PASSWORD_FILE: cannot read "/nope" (ENOENT)',
    );
    expect(() =>
      resolveSecretFiles({ SCHEMA_REGISTRY_BEARER_TOKEN_FILE: '/run/secrets/empty' }, read),
    ).toThrow(ConfigError);
  });

  it('leaves variables that are not secrets alone', () => {
    expect(resolveSecretFiles({ HOOKLEDGER_SOURCES_FILE: '/etc/sources.json' }, read)).toEqual({
      HOOKLEDGER_SOURCES_FILE: '/etc/sources.json',
    });
  });
});

describe('connection variables in the configuration', () => {
  const minimal = { KAFKA_BROKERS: 'b:9093', SCHEMA_REGISTRY_URL: 'https://r.example' };

  it('accepts the protocol and mechanism in any case', () => {
    const config = loadConfig({
      ...minimal,
      KAFKA_SECURITY_PROTOCOL: 'sasl_ssl',
      KAFKA_SASL_MECHANISM: 'scram-sha-512',
    });
    expect(config.KAFKA_SECURITY_PROTOCOL).toBe('SASL_SSL');
    expect(config.KAFKA_SASL_MECHANISM).toBe('SCRAM-SHA-512');
  });

  it('names a bad value in one line', () => {
    expect(() => loadConfig({ ...minimal, KAFKA_SASL_MECHANISM: 'GSSAPI' })).toThrow(
      /^KAFKA_SASL_MECHANISM: .*got "GSSAPI"/,
    );
  });
});
