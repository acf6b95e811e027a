// Where and as whom every hookledger client connects, from the configuration: the brokers and the
// connection properties (TLS, SASL, KAFKA_CONFIG_FILE), checked once by librdkafka itself.
import { type Config, ConfigError } from '../config.js';
import type { Logger } from '../log.js';
import { type KafkaClientProperties, kafkaClientProperties } from './client-properties.js';
import { type KafkaSettings, refusedProperty } from './rdkafka.js';

/** Checked properties by configuration: files are read and librdkafka asked once per process. */
const checked = new WeakMap<Config, Record<string, string>>();

/**
 * The connection properties of a configuration, as librdkafka will get them. Throws a ConfigError naming
 * the variable (or KAFKA_CONFIG_FILE) whose property librdkafka refuses.
 */
export function checkedKafkaProperties(config: Config): Record<string, string> {
  const known = checked.get(config);
  if (known) return known;
  const mapped = kafkaClientProperties(config);
  assertLibrdkafkaAccepts(mapped, config.KAFKA_CONFIG_FILE);
  checked.set(config, mapped.properties);
  return mapped.properties;
}

/** Throws a ConfigError with librdkafka's reason, naming where the refused property came from. */
export function assertLibrdkafkaAccepts(
  { properties, origins }: KafkaClientProperties,
  configFile: string | undefined,
  refused: (properties: Readonly<Record<string, string>>) => string | undefined = refusedProperty,
): void {
  if (Object.keys(properties).length === 0) return;
  const reason = refused(properties);
  if (reason === undefined) return;
  const property = /property "([^"]+)"|property: "([^"]+)"|"([^"]+)"/.exec(reason);
  const name = property?.[1] ?? property?.[2] ?? property?.[3];
  const origin = name === undefined ? undefined : origins[name];
  const where =
    origin === 'KAFKA_CONFIG_FILE' || (origin === undefined && configFile !== undefined)
      ? `KAFKA_CONFIG_FILE: ${configFile}`
      : (origin ?? 'Kafka connection settings');
  throw new ConfigError(`${where}: librdkafka refuses it: ${reason}`);
}

/** The settings every Kafka client of a command or service is built with. */
export function kafkaSettings(config: Config, clientId: string, logger: Logger): KafkaSettings {
  return {
    brokers: config.KAFKA_BROKERS,
    clientId,
    logger,
    properties: checkedKafkaProperties(config),
    topicPrefix: config.TOPIC_PREFIX,
  };
}
