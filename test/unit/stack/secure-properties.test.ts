import { describe, expect, it } from 'vitest';
import { kafkaServerProperties } from '../../../tools/stack/properties.js';
import {
  registryBasicAuthProperties,
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
    });
  });
});
