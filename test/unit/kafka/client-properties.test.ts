import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../runtime/config.js';
import {
  type KafkaConnectionConfig,
  kafkaClientProperties,
} from '../../../runtime/kafka/client-properties.js';
import { assertLibrdkafkaAccepts } from '../../../runtime/kafka/settings.js';
import { CERTIFICATE_PEM, ENCRYPTED_KEY_PEM, KEY_PASSWORD, KEY_PEM } from './pem-fixtures.js';

const FILES: Record<string, string> = {
  '/etc/kafka/ca.pem': CERTIFICATE_PEM,
  '/etc/kafka/client.pem': CERTIFICATE_PEM,
  '/etc/kafka/client.key': KEY_PEM,
  '/etc/kafka/client-encrypted.key': ENCRYPTED_KEY_PEM,
  '/etc/kafka/not-pem.txt': 'hello',
  '/etc/kafka/client.properties': '# more librdkafka\nsocket.keepalive.enable=true\nclient.rack=eu-west-1a\n',
};
const read = (path: string) => {
  const text = FILES[path];
  if (text === undefined) throw Object.assign(new Error('missing'), { code: 'ENOENT' });
  return Buffer.from(text);
};

const properties = (config: KafkaConnectionConfig) => kafkaClientProperties(config, read).properties;

function errorOf(config: KafkaConnectionConfig): string {
  try {
    kafkaClientProperties(config, read);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('expected a ConfigError');
}

const SCRAM: KafkaConnectionConfig = {
  KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
  KAFKA_SASL_MECHANISM: 'SCRAM-SHA-512',
  KAFKA_SASL_USERNAME: 'hookledger',
  KAFKA_SASL_PASSWORD: 'pw',
};

describe('connection variables as librdkafka properties', () => {
  it('sets nothing for a PLAINTEXT cluster', () => {
    expect(properties({})).toEqual({});
  });

  it('maps SASL_SSL with SCRAM and a CA file', () => {
    expect(properties({ ...SCRAM, KAFKA_SSL_CA_FILE: '/etc/kafka/ca.pem' })).toEqual({
      'security.protocol': 'sasl_ssl',
      'sasl.mechanism': 'SCRAM-SHA-512',
      'sasl.username': 'hookledger',
      'sasl.password': 'pw',
      'ssl.ca.location': '/etc/kafka/ca.pem',
    });
  });

  it('maps OAUTHBEARER with an OIDC token endpoint to librdkafka’s own token fetching', () => {
    expect(
      properties({
        KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
        KAFKA_SASL_MECHANISM: 'OAUTHBEARER',
        KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL: 'https://idp.example/oauth2/token',
        KAFKA_SASL_OAUTHBEARER_CLIENT_ID: 'hookledger',
        KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET: 'secret',
        KAFKA_SASL_OAUTHBEARER_SCOPE: 'kafka',
      }),
    ).toEqual({
      'security.protocol': 'sasl_ssl',
      'sasl.mechanism': 'OAUTHBEARER',
      'sasl.oauthbearer.method': 'oidc',
      'sasl.oauthbearer.token.endpoint.url': 'https://idp.example/oauth2/token',
      'sasl.oauthbearer.client.id': 'hookledger',
      'sasl.oauthbearer.client.secret': 'secret',
      'sasl.oauthbearer.scope': 'kafka',
    });
  });

  it('maps a client certificate and its encrypted key (mutual TLS)', () => {
    expect(
      properties({
        KAFKA_SECURITY_PROTOCOL: 'SSL',
        KAFKA_SSL_CERT_FILE: '/etc/kafka/client.pem',
        KAFKA_SSL_KEY_FILE: '/etc/kafka/client-encrypted.key',
        KAFKA_SSL_KEY_PASSWORD: KEY_PASSWORD,
      }),
    ).toMatchObject({
      'ssl.certificate.location': '/etc/kafka/client.pem',
      'ssl.key.location': '/etc/kafka/client-encrypted.key',
      'ssl.key.password': KEY_PASSWORD,
    });
  });

  it('adds the properties file, and names each of its properties’ origin', () => {
    const mapped = kafkaClientProperties(
      { ...SCRAM, KAFKA_CONFIG_FILE: '/etc/kafka/client.properties' },
      read,
    );
    expect(mapped.properties).toMatchObject({
      'socket.keepalive.enable': 'true',
      'client.rack': 'eu-west-1a',
    });
    expect(mapped.origins['client.rack']).toBe('KAFKA_CONFIG_FILE');
    expect(mapped.origins['sasl.password']).toBe('KAFKA_SASL_PASSWORD');
  });
});

describe('connection variables that cannot connect are refused in one line', () => {
  it('SASL without a mechanism, or without its user and password', () => {
    expect(errorOf({ KAFKA_SECURITY_PROTOCOL: 'SASL_SSL' })).toMatch(
      /^KAFKA_SASL_MECHANISM: expected PLAIN, /,
    );
    expect(errorOf({ ...SCRAM, KAFKA_SASL_PASSWORD: undefined })).toBe(
      'KAFKA_SASL_PASSWORD: SASL SCRAM-SHA-512 needs it (or KAFKA_SASL_PASSWORD_FILE); it is not set',
    );
    expect(errorOf({ KAFKA_SECURITY_PROTOCOL: 'SASL_SSL', KAFKA_SASL_MECHANISM: 'OAUTHBEARER' })).toMatch(
      /^KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL: /,
    );
  });

  it('credentials or TLS files for a protocol that never uses them', () => {
    expect(errorOf({ KAFKA_SASL_USERNAME: 'u' })).toBe(
      'KAFKA_SASL_USERNAME: set, but KAFKA_SECURITY_PROTOCOL is PLAINTEXT (not set): SASL needs SASL_SSL (or SASL_PLAINTEXT)',
    );
    expect(
      errorOf({
        ...SCRAM,
        KAFKA_SECURITY_PROTOCOL: 'SASL_PLAINTEXT',
        KAFKA_SSL_CA_FILE: '/etc/kafka/ca.pem',
      }),
    ).toMatch(
      /^KAFKA_SSL_CA_FILE: set, but KAFKA_SECURITY_PROTOCOL is SASL_PLAINTEXT: TLS needs SSL or SASL_SSL/,
    );
  });

  it('a TLS file that is missing, not PEM, or a key whose password does not open it', () => {
    const tls = { KAFKA_SECURITY_PROTOCOL: 'SSL' as const };
    expect(errorOf({ ...tls, KAFKA_SSL_CA_FILE: '/nope.pem' })).toBe(
      'KAFKA_SSL_CA_FILE: cannot read "/nope.pem" (ENOENT)',
    );
    expect(errorOf({ ...tls, KAFKA_SSL_CA_FILE: '/etc/kafka/not-pem.txt' })).toBe(
      'KAFKA_SSL_CA_FILE: "/etc/kafka/not-pem.txt" holds no PEM certificate',
    );
    expect(errorOf({ ...tls, KAFKA_SSL_KEY_FILE: '/etc/kafka/client.key' })).toMatch(
      /^KAFKA_SSL_CERT_FILE: /,
    );
    expect(
      errorOf({
        ...tls,
        KAFKA_SSL_CERT_FILE: '/etc/kafka/client.pem',
        KAFKA_SSL_KEY_FILE: '/etc/kafka/client-encrypted.key',
        KAFKA_SSL_KEY_PASSWORD: 'wrong',
      }),
    ).toBe('KAFKA_SSL_KEY_PASSWORD: does not open the PEM private key in "/etc/kafka/client-encrypted.key"');
  });

  it('a properties file that sets what hookledger owns, or what a variable already sets', () => {
    FILES['/etc/kafka/owned.properties'] = 'acks=1\n';
    FILES['/etc/kafka/twice.properties'] = '\nsasl.password=other\n';
    expect(errorOf({ KAFKA_CONFIG_FILE: '/etc/kafka/owned.properties' })).toBe(
      'KAFKA_CONFIG_FILE: /etc/kafka/owned.properties:1: acks is set by hookledger itself (its delivery guarantees): remove it',
    );
    expect(errorOf({ ...SCRAM, KAFKA_CONFIG_FILE: '/etc/kafka/twice.properties' })).toBe(
      'KAFKA_CONFIG_FILE: /etc/kafka/twice.properties:2: sasl.password is also set by KAFKA_SASL_PASSWORD: keep one of them',
    );
  });
});

describe("librdkafka's verdict on the properties", () => {
  it('names the file for a property of the file it refuses', () => {
    const mapped = {
      properties: { 'fetch.wait.max.msx': '1' },
      origins: { 'fetch.wait.max.msx': 'KAFKA_CONFIG_FILE' },
    };
    expect(() => assertLibrdkafkaAccepts(mapped, '/etc/kafka/client.properties')).toThrow(
      'KAFKA_CONFIG_FILE: /etc/kafka/client.properties: librdkafka refuses it: No such configuration property: "fetch.wait.max.msx"',
    );
  });

  it('names the variable for a property a variable set', () => {
    const mapped = {
      properties: { 'sasl.oauthbearer.method': 'oidc' },
      origins: { 'sasl.oauthbearer.method': 'KAFKA_SASL_MECHANISM' },
    };
    const refused = () =>
      'Configuration property "sasl.oauthbearer.method" not supported in this build: OAuth/OIDC depends on libcurl';
    expect(() => assertLibrdkafkaAccepts(mapped, undefined, refused)).toThrow(
      /^KAFKA_SASL_MECHANISM: librdkafka refuses it: Configuration property "sasl.oauthbearer.method" not supported/,
    );
  });

  it('accepts what librdkafka accepts', () => {
    const mapped = {
      properties: { 'socket.keepalive.enable': 'true' },
      origins: { 'socket.keepalive.enable': 'KAFKA_CONFIG_FILE' },
    };
    expect(() => assertLibrdkafkaAccepts(mapped, '/etc/kafka/client.properties')).not.toThrow();
  });
});
