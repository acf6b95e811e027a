// Pure renderers for the secured local stack (`stack up --secure`): a SASL_SSL listener beside the
// broker's PLAINTEXT one, SCRAM users created when the storage is formatted, OAUTHBEARER tokens checked
// against the stack's token endpoint's key, the registry over HTTPS behind basic auth, and the variables a
// client needs to reach both.
import { pathToFileURL } from 'node:url';
import type { Properties } from './properties.js';

/** The one SCRAM mechanism the secured listener offers: the strongest librdkafka and Kafka share. */
export const SECURE_MECHANISM = 'SCRAM-SHA-512';

/**
 * What the broker's OAUTHBEARER validator checks a token against (KIP-768): the key set in a file (the
 * token endpoint's public key), the issuer and the audience.
 */
export interface OAuthValidation {
  jwksFile: string;
  issuer: string;
  audience: string;
}

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
  /** OAUTHBEARER beside SCRAM on the same listener, when given. */
  oauth?: OAuthValidation;
}

/**
 * What the secured listener adds to (and changes in) the single node's server.properties. Inter-broker
 * and controller traffic stay PLAINTEXT: one node talks only to itself.
 */
export function secureListenerProperties(
  base: Properties,
  { host = '127.0.0.1', port, keystorePem, oauth }: SecureListener,
): Properties {
  const mechanisms = oauth ? `${SECURE_MECHANISM},OAUTHBEARER` : SECURE_MECHANISM;
  return {
    listeners: `${base.listeners},SASL_SSL://${host}:${port}`,
    'advertised.listeners': `${base['advertised.listeners']},SASL_SSL://${host}:${port}`,
    'listener.security.protocol.map': `${base['listener.security.protocol.map']},SASL_SSL:SASL_SSL`,
    'sasl.enabled.mechanisms': mechanisms,
    'listener.name.sasl_ssl.sasl.enabled.mechanisms': mechanisms,
    [`listener.name.sasl_ssl.${SECURE_MECHANISM.toLowerCase()}.sasl.jaas.config`]:
      'org.apache.kafka.common.security.scram.ScramLoginModule required;',
    // KIP-651: PEM key and certificate chain in one file, no keystore tool needed.
    'listener.name.sasl_ssl.ssl.keystore.type': 'PEM',
    'listener.name.sasl_ssl.ssl.keystore.location': keystorePem,
    ...(oauth ? oauthValidationProperties(oauth) : {}),
  };
}

/**
 * KIP-768's broker side: the validating callback handler checks each token's RS256 signature against the
 * key set (a file, so the broker never depends on the token endpoint being up), its expiry, issuer and
 * audience; the principal is the token's `sub`.
 */
function oauthValidationProperties({ jwksFile, issuer, audience }: OAuthValidation): Properties {
  return {
    'listener.name.sasl_ssl.oauthbearer.sasl.jaas.config':
      'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;',
    'listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class':
      'org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler',
    'sasl.oauthbearer.jwks.endpoint.url': pathToFileURL(jwksFile).href,
    'sasl.oauthbearer.expected.issuer': issuer,
    'sasl.oauthbearer.expected.audience': audience,
    // KIP-368, as managed clusters do: a session ends when its token expires unless the client logs in
    // again with a fresh one, so a client that never refreshes its token fails here too, not only there.
    'listener.name.sasl_ssl.oauthbearer.connections.max.reauth.ms': 3_600_000,
  };
}

/**
 * The JVM flag that lets the broker read the key set: Kafka 3.9.1 and 4.x only fetch OAuth URLs listed in
 * this system property (CVE-2025-27817); 4.x allows none by default.
 */
export function oauthAllowedUrlsFlag({ jwksFile }: OAuthValidation): string {
  return `-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls=${pathToFileURL(jwksFile).href}`;
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

/**
 * Apicurio over HTTPS only: Quarkus serves TLS on `port` from PEM files and opens no plain HTTP port
 * (`quarkus.http.port` is then unused). Health (`/health/ready`) moves to TLS with the API: the registry's
 * build leaves Quarkus's separate management interface off, so the main server answers it.
 */
export function registryHttpsProperties(
  port: number,
  { certFile, keyFile }: { certFile: string; keyFile: string },
): Properties {
  return {
    'quarkus.http.ssl-port': port,
    'quarkus.http.ssl.certificate.files': certFile,
    'quarkus.http.ssl.certificate.key-files': keyFile,
    'quarkus.http.insecure-requests': 'disabled',
  };
}

/**
 * The variables a hookledger client needs for the secured stack (beside KAFKA_BROKERS and SCHEMA_REGISTRY_URL,
 * an https one): the stack's one CA signed both the broker's and the registry's certificates.
 */
export function secureClientEnv(secrets: SecureStackSecrets, caFile: string): Record<string, string> {
  return {
    KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
    KAFKA_SASL_MECHANISM: SECURE_MECHANISM,
    KAFKA_SASL_USERNAME: secrets.username,
    KAFKA_SASL_PASSWORD: secrets.kafkaPassword,
    KAFKA_SSL_CA_FILE: caFile,
    SCHEMA_REGISTRY_USERNAME: secrets.username,
    SCHEMA_REGISTRY_PASSWORD: secrets.registryPassword,
    SCHEMA_REGISTRY_CA_FILE: caFile,
  };
}

/** The token endpoint's client: what a hookledger process logs in to Kafka with over OAUTHBEARER. */
export interface OAuthClient {
  tokenUrl: string;
  clientId: string;
  clientSecret: string;
}

/**
 * The secured stack's variables with OAUTHBEARER instead of SCRAM: librdkafka fetches a token from the
 * endpoint (client credentials) and refreshes it before it expires. The registry keeps basic auth.
 */
export function oauthClientEnv(
  secrets: SecureStackSecrets,
  caFile: string,
  { tokenUrl, clientId, clientSecret }: OAuthClient,
): Record<string, string> {
  const {
    KAFKA_SASL_USERNAME: _user,
    KAFKA_SASL_PASSWORD: _password,
    ...rest
  } = secureClientEnv(secrets, caFile);
  return {
    ...rest,
    KAFKA_SASL_MECHANISM: 'OAUTHBEARER',
    KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL: tokenUrl,
    KAFKA_SASL_OAUTHBEARER_CLIENT_ID: clientId,
    KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET: clientSecret,
  };
}
