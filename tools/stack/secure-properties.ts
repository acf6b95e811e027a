// Pure renderers for the secured local stack (`stack up --secure`): a SASL_SSL listener beside the
// broker's PLAINTEXT one, SCRAM users created when the storage is formatted, the registry behind HTTP
// basic auth, and the variables a client needs to reach both.
import type { Properties } from './properties.js';

/** The one SCRAM mechanism the secured listener offers: the strongest librdkafka and Kafka share. */
export const SECURE_MECHANISM = 'SCRAM-SHA-512';

export interface SecureStackSecrets {
  /** The SCRAM user clients log in as, and the registry's basic-auth user (one identity, two passwords). */
  username: string;
  kafkaPassword: string;
  registryPassword: string;
}

export interface SecureListener {
  host?: string;
  /** The SASL_SSL listener's port; the PLAINTEXT one stays for the registry and the stack's own checks. */
  port: number;
  /** A PEM file with the broker's private key (unencrypted PKCS#8) followed by its certificate. */
  keystorePem: string;
}

/**
 * What the secured listener adds to (and changes in) the single node's server.properties. Inter-broker
 * and controller traffic stay PLAINTEXT: one node talks only to itself.
 */
export function secureListenerProperties(
  base: Properties,
  { host = '127.0.0.1', port, keystorePem }: SecureListener,
): Properties {
  return {
    listeners: `${base.listeners},SASL_SSL://${host}:${port}`,
    'advertised.listeners': `${base['advertised.listeners']},SASL_SSL://${host}:${port}`,
    'listener.security.protocol.map': `${base['listener.security.protocol.map']},SASL_SSL:SASL_SSL`,
    'sasl.enabled.mechanisms': SECURE_MECHANISM,
    'listener.name.sasl_ssl.sasl.enabled.mechanisms': SECURE_MECHANISM,
    [`listener.name.sasl_ssl.${SECURE_MECHANISM.toLowerCase()}.sasl.jaas.config`]:
      'org.apache.kafka.common.security.scram.ScramLoginModule required;',
    // KIP-651: PEM key and certificate chain in one file, no keystore tool needed.
    'listener.name.sasl_ssl.ssl.keystore.type': 'PEM',
    'listener.name.sasl_ssl.ssl.keystore.location': keystorePem,
  };
}

/** `kafka-storage format` arguments that create the SCRAM user in KRaft's metadata (KIP-900). */
export function scramFormatArgs({ username, kafkaPassword }: SecureStackSecrets): string[] {
  return ['--add-scram', `${SECURE_MECHANISM}=[name=${username},password=${kafkaPassword}]`];
}

/**
 * Apicurio 3.0.9 without Keycloak: Quarkus's built-in HTTP basic auth over its embedded (properties)
 * user store, which the registry's build includes (quarkus-elytron-security-properties-file). With
 * `quarkus.http.auth.basic` on, Apicurio's own interceptor refuses anonymous calls to its APIs (ccompat
 * included); role-based authorization stays off, so the one user may do everything.
 */
export function registryBasicAuthProperties({ username, registryPassword }: SecureStackSecrets): Properties {
  return {
    'quarkus.http.auth.basic': true,
    'quarkus.security.users.embedded.enabled': true,
    'quarkus.security.users.embedded.plain-text': true,
    [`quarkus.security.users.embedded.users.${username}`]: registryPassword,
    [`quarkus.security.users.embedded.roles.${username}`]: 'sr-admin',
  };
}

/** The variables a hookledger client needs for the secured stack (beside KAFKA_BROKERS and SCHEMA_REGISTRY_URL). */
export function secureClientEnv(secrets: SecureStackSecrets, caFile: string): Record<string, string> {
  return {
    KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
    KAFKA_SASL_MECHANISM: SECURE_MECHANISM,
    KAFKA_SASL_USERNAME: secrets.username,
    KAFKA_SASL_PASSWORD: secrets.kafkaPassword,
    KAFKA_SSL_CA_FILE: caFile,
    SCHEMA_REGISTRY_USERNAME: secrets.username,
    SCHEMA_REGISTRY_PASSWORD: secrets.registryPassword,
  };
}
