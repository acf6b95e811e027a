// The one place that maps the connection variables (KAFKA_SECURITY_PROTOCOL, KAFKA_SASL_*, KAFKA_SSL_*,
// KAFKA_CONFIG_FILE) to librdkafka properties, and refuses combinations that cannot connect, naming the
// variable. Every Kafka client gets these properties through kafkaSettings() (settings.ts).
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { type Config, ConfigError } from '../config.js';
import { parseJavaProperties } from './java-properties.js';

export type KafkaConnectionConfig = Pick<
  Config,
  | 'KAFKA_SECURITY_PROTOCOL'
  | 'KAFKA_SASL_MECHANISM'
  | 'KAFKA_SASL_USERNAME'
  | 'KAFKA_SASL_PASSWORD'
  | 'KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL'
  | 'KAFKA_SASL_OAUTHBEARER_CLIENT_ID'
  | 'KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET'
  | 'KAFKA_SASL_OAUTHBEARER_SCOPE'
  | 'KAFKA_SSL_CA_FILE'
  | 'KAFKA_SSL_CERT_FILE'
  | 'KAFKA_SSL_KEY_FILE'
  | 'KAFKA_SSL_KEY_PASSWORD'
  | 'KAFKA_CONFIG_FILE'
>;

export interface KafkaClientProperties {
  /** librdkafka properties, all as strings (librdkafka parses every value itself). */
  properties: Record<string, string>;
  /** Which variable set each property (KAFKA_CONFIG_FILE for the file's), to name it when librdkafka refuses one. */
  origins: Record<string, string>;
}

/**
 * Properties hookledger sets per client for its promises (acks=all, idempotence, transactions,
 * read_committed, its groups): a file that set them would be overridden silently, so it is refused.
 */
export const HOOKLEDGER_OWNED_PROPERTIES: ReadonlySet<string> = new Set([
  'bootstrap.servers',
  'metadata.broker.list',
  'client.id',
  'group.id',
  'group.instance.id',
  'transactional.id',
  'enable.idempotence',
  'acks',
  'request.required.acks',
  'isolation.level',
  'enable.auto.commit',
  'enable.auto.offset.store',
  'partitioner',
]);

type ReadFile = (path: string) => Buffer;

const readBytes: ReadFile = (path) => readFileSync(path);

/** The librdkafka properties of a configuration; throws a ConfigError naming the variable at fault. */
export function kafkaClientProperties(
  config: KafkaConnectionConfig,
  read: ReadFile = readBytes,
): KafkaClientProperties {
  const properties: Record<string, string> = {};
  const origins: Record<string, string> = {};
  const set = (variable: string, property: string, value: string | undefined) => {
    if (value === undefined) return;
    properties[property] = value;
    origins[property] = variable;
  };

  set('KAFKA_SECURITY_PROTOCOL', 'security.protocol', config.KAFKA_SECURITY_PROTOCOL?.toLowerCase());
  set('KAFKA_SASL_MECHANISM', 'sasl.mechanism', config.KAFKA_SASL_MECHANISM);
  set('KAFKA_SASL_USERNAME', 'sasl.username', config.KAFKA_SASL_USERNAME);
  set('KAFKA_SASL_PASSWORD', 'sasl.password', config.KAFKA_SASL_PASSWORD);
  if (config.KAFKA_SASL_MECHANISM === 'OAUTHBEARER' && config.KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL) {
    // librdkafka fetches and refreshes the token itself (client credentials grant).
    set('KAFKA_SASL_MECHANISM', 'sasl.oauthbearer.method', 'oidc');
  }
  set(
    'KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL',
    'sasl.oauthbearer.token.endpoint.url',
    config.KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL,
  );
  set(
    'KAFKA_SASL_OAUTHBEARER_CLIENT_ID',
    'sasl.oauthbearer.client.id',
    config.KAFKA_SASL_OAUTHBEARER_CLIENT_ID,
  );
  set(
    'KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET',
    'sasl.oauthbearer.client.secret',
    config.KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET,
  );
  set('KAFKA_SASL_OAUTHBEARER_SCOPE', 'sasl.oauthbearer.scope', config.KAFKA_SASL_OAUTHBEARER_SCOPE);
  set('KAFKA_SSL_CA_FILE', 'ssl.ca.location', config.KAFKA_SSL_CA_FILE);
  set('KAFKA_SSL_CERT_FILE', 'ssl.certificate.location', config.KAFKA_SSL_CERT_FILE);
  set('KAFKA_SSL_KEY_FILE', 'ssl.key.location', config.KAFKA_SSL_KEY_FILE);
  set('KAFKA_SSL_KEY_PASSWORD', 'ssl.key.password', config.KAFKA_SSL_KEY_PASSWORD);

  if (config.KAFKA_CONFIG_FILE !== undefined) {
    for (const [property, value] of Object.entries(fileProperties(config.KAFKA_CONFIG_FILE, read, origins))) {
      properties[property] = value;
      origins[property] = 'KAFKA_CONFIG_FILE';
    }
  }

  checkCombination(properties, origins);
  checkTlsFiles(config, read);
  return { properties, origins };
}

function fileProperties(
  file: string,
  read: ReadFile,
  fromVariables: Readonly<Record<string, string>>,
): Record<string, string> {
  let text: string;
  try {
    text = read(file).toString('utf8');
  } catch (error) {
    throw new ConfigError(`KAFKA_CONFIG_FILE: cannot read ${JSON.stringify(file)} (${errorCode(error)})`);
  }
  const found: Record<string, string> = {};
  for (const { key, value, line } of parseJavaProperties(text)) {
    const where = `KAFKA_CONFIG_FILE: ${file}:${line}`;
    if (key === '') throw new ConfigError(`${where}: a value without a property name`);
    if (HOOKLEDGER_OWNED_PROPERTIES.has(key))
      throw new ConfigError(
        `${where}: ${key} is set by hookledger itself (${key === 'bootstrap.servers' || key === 'metadata.broker.list' ? 'KAFKA_BROKERS' : 'its delivery guarantees'}): remove it`,
      );
    const variable = fromVariables[key];
    if (variable !== undefined)
      throw new ConfigError(`${where}: ${key} is also set by ${variable}: keep one of them`);
    found[key] = value;
  }
  return found;
}

const SASL_PROTOCOLS = new Set(['sasl_plaintext', 'sasl_ssl']);
const TLS_PROTOCOLS = new Set(['ssl', 'sasl_ssl']);
const MECHANISMS_WITH_PASSWORD = new Set(['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512']);

/** What librdkafka would only find out at connect time, or never (credentials sent nowhere). */
function checkCombination(properties: Record<string, string>, origins: Record<string, string>): void {
  const protocol = (properties['security.protocol'] ?? 'plaintext').toLowerCase();
  const protocolSource = origins['security.protocol'] ?? 'KAFKA_SECURITY_PROTOCOL';
  const shownProtocol = `${protocolSource} is ${protocol.toUpperCase()}${origins['security.protocol'] ? '' : ' (not set)'}`;
  const mechanism = properties['sasl.mechanism'] ?? properties['sasl.mechanisms'];

  if (SASL_PROTOCOLS.has(protocol)) {
    if (mechanism === undefined)
      throw new ConfigError(
        `KAFKA_SASL_MECHANISM: expected PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER (${shownProtocol}; it is not set)`,
      );
    const upper = mechanism.toUpperCase();
    if (MECHANISMS_WITH_PASSWORD.has(upper)) {
      for (const [property, variable] of [
        ['sasl.username', 'KAFKA_SASL_USERNAME'],
        ['sasl.password', 'KAFKA_SASL_PASSWORD'],
      ] as const) {
        if (properties[property] === undefined)
          throw new ConfigError(`${variable}: SASL ${upper} needs it (or ${variable}_FILE); it is not set`);
      }
    }
    if (upper === 'OAUTHBEARER' && properties['sasl.oauthbearer.method'] === 'oidc') {
      for (const [property, variable] of [
        ['sasl.oauthbearer.client.id', 'KAFKA_SASL_OAUTHBEARER_CLIENT_ID'],
        ['sasl.oauthbearer.client.secret', 'KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET'],
      ] as const) {
        if (properties[property] === undefined)
          throw new ConfigError(
            `${variable}: SASL OAUTHBEARER with a token endpoint needs it; it is not set`,
          );
      }
    } else if (upper === 'OAUTHBEARER' && properties['sasl.oauthbearer.method'] === undefined) {
      throw new ConfigError(
        'KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL: SASL OAUTHBEARER needs the OIDC token endpoint (with KAFKA_SASL_OAUTHBEARER_CLIENT_ID and _CLIENT_SECRET); it is not set',
      );
    }
  } else {
    // Credentials for a protocol that never sends them: a mistake, not something to ignore.
    for (const property of [
      'sasl.mechanism',
      'sasl.username',
      'sasl.password',
      'sasl.oauthbearer.token.endpoint.url',
      'sasl.oauthbearer.client.id',
      'sasl.oauthbearer.client.secret',
    ]) {
      const variable = origins[property];
      if (variable !== undefined && variable !== 'KAFKA_CONFIG_FILE')
        throw new ConfigError(
          `${variable}: set, but ${shownProtocol}: SASL needs SASL_SSL (or SASL_PLAINTEXT)`,
        );
    }
  }

  if (!TLS_PROTOCOLS.has(protocol)) {
    for (const property of ['ssl.ca.location', 'ssl.certificate.location', 'ssl.key.location']) {
      const variable = origins[property];
      if (variable !== undefined && variable !== 'KAFKA_CONFIG_FILE')
        throw new ConfigError(`${variable}: set, but ${shownProtocol}: TLS needs SSL or SASL_SSL`);
    }
  }
}

/**
 * The PEM files are read now, so a wrong path, a file that is not PEM or a wrong key password is one
 * line at start rather than a TLS failure on every connection attempt.
 */
function checkTlsFiles(config: KafkaConnectionConfig, read: ReadFile): void {
  const load = (variable: string, file: string): Buffer => {
    try {
      return read(file);
    } catch (error) {
      throw new ConfigError(`${variable}: cannot read ${JSON.stringify(file)} (${errorCode(error)})`);
    }
  };
  for (const variable of ['KAFKA_SSL_CA_FILE', 'KAFKA_SSL_CERT_FILE'] as const) {
    const file = config[variable];
    if (file === undefined) continue;
    const pem = load(variable, file);
    try {
      new X509Certificate(pem);
    } catch {
      throw new ConfigError(`${variable}: ${JSON.stringify(file)} holds no PEM certificate`);
    }
  }
  const certFile = config.KAFKA_SSL_CERT_FILE;
  const keyFile = config.KAFKA_SSL_KEY_FILE;
  if ((certFile === undefined) !== (keyFile === undefined))
    throw new ConfigError(
      certFile === undefined
        ? 'KAFKA_SSL_CERT_FILE: a client key needs its certificate (KAFKA_SSL_KEY_FILE is set)'
        : 'KAFKA_SSL_KEY_FILE: a client certificate needs its private key (KAFKA_SSL_CERT_FILE is set)',
    );
  if (keyFile !== undefined) {
    const key = load('KAFKA_SSL_KEY_FILE', keyFile);
    try {
      createPrivateKey({ key, passphrase: config.KAFKA_SSL_KEY_PASSWORD ?? '' });
    } catch {
      throw new ConfigError(
        config.KAFKA_SSL_KEY_PASSWORD === undefined
          ? `KAFKA_SSL_KEY_FILE: ${JSON.stringify(keyFile)} holds no PEM private key readable without a password (KAFKA_SSL_KEY_PASSWORD is not set)`
          : `KAFKA_SSL_KEY_PASSWORD: does not open the PEM private key in ${JSON.stringify(keyFile)}`,
      );
    }
  }
}

function errorCode(error: unknown): string {
  return (error as NodeJS.ErrnoException).code ?? (error as Error).message;
}
