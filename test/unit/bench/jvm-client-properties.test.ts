import { describe, expect, it } from 'vitest';
import { jvmClientProperties } from '../../../tools/bench/jvm-client-properties.js';

describe("the JVM perf tools' connection properties", () => {
  it('say nothing for a plaintext cluster', () => {
    expect(jvmClientProperties({})).toEqual({});
  });

  it('log in over SASL_SSL with SCRAM and trust the PEM CA librdkafka is given', () => {
    expect(
      jvmClientProperties({
        'security.protocol': 'sasl_ssl',
        'sasl.mechanism': 'SCRAM-SHA-512',
        'sasl.username': 'hookledger',
        'sasl.password': 'p"w\\1',
        'ssl.ca.location': '/s/ca.pem',
      }),
    ).toEqual({
      'security.protocol': 'SASL_SSL',
      'sasl.mechanism': 'SCRAM-SHA-512',
      'sasl.jaas.config':
        'org.apache.kafka.common.security.scram.ScramLoginModule required username="hookledger" password="p\\"w\\\\1";',
      'ssl.truststore.type': 'PEM',
      'ssl.truststore.location': '/s/ca.pem',
    });
  });

  it('log in with SASL PLAIN through its own login module', () => {
    const java = jvmClientProperties({
      'security.protocol': 'sasl_plaintext',
      'sasl.mechanism': 'PLAIN',
      'sasl.username': 'u',
      'sasl.password': 'p',
    });
    expect(java['sasl.jaas.config']).toBe(
      'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";',
    );
  });

  it('refuse, naming it, a property the Java client would need said otherwise', () => {
    expect(() =>
      jvmClientProperties({ 'security.protocol': 'ssl', 'ssl.certificate.location': '/s/client.pem' }),
    ).toThrow(/ssl\.certificate\.location/);
    expect(() =>
      jvmClientProperties({
        'security.protocol': 'sasl_ssl',
        'sasl.mechanism': 'OAUTHBEARER',
        'sasl.oauthbearer.method': 'oidc',
      }),
    ).toThrow(/sasl\.oauthbearer\.method/);
  });
});
