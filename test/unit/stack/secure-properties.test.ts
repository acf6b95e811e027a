import { describe, expect, it } from 'vitest';
import { kafkaServerProperties } from '../../../tools/stack/properties.js';
import {
  oauthAllowedUrlsFlag,
  oauthClientEnv,
  registryBasicAuthProperties,
  registryHttpsProperties,
  scramFormatArgs,
  secureClientEnv,
  secureListenerProperties,
} from '../../../tools/stack/secure-properties.js';

const secrets = { username: 'hookledger', kafkaPassword: 'kpw', registryPassword: 'rpw' };

describe('the secured local stack', () => {
  it('adds a SASL_SSL listener beside the PLAINTEXT one, SCRAM-SHA-512 with a PEM keystore', () => {
    const base = kafkaServerProperties({ port: 9092, controllerPort: 9093, dataDir: '/d' });
    const added = secureListenerProperties(base, { port: 9094, keystorePem: '/s/broker-keystore.pem' });
    expect(added.listeners).toBe(
      'PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093,SASL_SSL://127.0.0.1:9094',
    );
    expect(added['advertised.listeners']).toBe('PLAINTEXT://127.0.0.1:9092,SASL_SSL://127.0.0.1:9094');
    expect(added['listener.security.protocol.map']).toBe(
      'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_SSL:SASL_SSL',
    );
    expect(added['listener.name.sasl_ssl.sasl.enabled.mechanisms']).toBe('SCRAM-SHA-512');
    expect(added['listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config']).toMatch(
      /ScramLoginModule required;$/,
    );
    expect(added['listener.name.sasl_ssl.ssl.keystore.location']).toBe('/s/broker-keystore.pem');
  });

  it('also takes OAUTHBEARER on that listener, checking tokens against the key set in a file', () => {
    const base = kafkaServerProperties({ port: 9092, controllerPort: 9093, dataDir: '/d' });
    const oauth = { jwksFile: '/s/jwks.json', issuer: 'hookledger-local-stack', audience: 'kafka' };
    const added = secureListenerProperties(base, { port: 9094, keystorePem: '/s/k.pem', oauth });
    expect(added['listener.name.sasl_ssl.sasl.enabled.mechanisms']).toBe('SCRAM-SHA-512,OAUTHBEARER');
    expect(added).toMatchObject({
      'listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class':
        'org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler',
      'sasl.oauthbearer.jwks.endpoint.url': 'file:///s/jwks.json',
      'sasl.oauthbearer.expected.issuer': 'hookledger-local-stack',
      'sasl.oauthbearer.expected.audience': 'kafka',
    });
    // Kafka 3.9.1+ reads only the OAuth URLs this JVM flag allows (4.x: none by default).
    expect(oauthAllowedUrlsFlag(oauth)).toBe(
      '-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls=file:///s/jwks.json',
    );
  });

  it('hands OAUTHBEARER clients the token endpoint and their client instead of a SCRAM password', () => {
    const env = oauthClientEnv(secrets, '/s/ca.pem', {
      tokenUrl: 'http://127.0.0.1:8080/token',
      clientId: 'hookledger',
      clientSecret: 'cs',
    });
    expect(env).toMatchObject({
      KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
      KAFKA_SASL_MECHANISM: 'OAUTHBEARER',
      KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL: 'http://127.0.0.1:8080/token',
      KAFKA_SASL_OAUTHBEARER_CLIENT_ID: 'hookledger',
      KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET: 'cs',
      KAFKA_SSL_CA_FILE: '/s/ca.pem',
      SCHEMA_REGISTRY_PASSWORD: 'rpw',
    });
    expect(env).not.toHaveProperty('KAFKA_SASL_PASSWORD');
    expect(env).not.toHaveProperty('KAFKA_SASL_USERNAME');
  });

  it('creates the SCRAM user when the storage is formatted', () => {
    expect(scramFormatArgs(secrets)).toEqual(['--add-scram', 'SCRAM-SHA-512=[name=hookledger,password=kpw]']);
  });

  it('puts the registry behind basic auth with one user', () => {
    expect(registryBasicAuthProperties(secrets)).toMatchObject({
      'quarkus.http.auth.basic': true,
      'quarkus.security.users.embedded.users.hookledger': 'rpw',
    });
  });

  it('hands clients the variables they need, nothing more', () => {
    expect(secureClientEnv(secrets, '/s/ca.pem')).toEqual({
      KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
      KAFKA_SASL_MECHANISM: 'SCRAM-SHA-512',
      KAFKA_SASL_USERNAME: 'hookledger',
      KAFKA_SASL_PASSWORD: 'kpw',
      KAFKA_SSL_CA_FILE: '/s/ca.pem',
      SCHEMA_REGISTRY_USERNAME: 'hookledger',
      SCHEMA_REGISTRY_PASSWORD: 'rpw',
      SCHEMA_REGISTRY_CA_FILE: '/s/ca.pem',
    });
  });

  it('serves the registry over HTTPS only, on its one port, from PEM files', () => {
    expect(
      registryHttpsProperties(8443, { certFile: '/s/registry.pem', keyFile: '/s/registry.key' }),
    ).toEqual({
      'quarkus.http.ssl-port': 8443,
      'quarkus.http.ssl.certificate.files': '/s/registry.pem',
      'quarkus.http.ssl.certificate.key-files': '/s/registry.key',
      'quarkus.http.insecure-requests': 'disabled',
    });
  });
});
