// Kafka's JVM perf tools (the benchmarks' baselines) reach the cluster the product reaches: the
// connection properties librdkafka gets (runtime/kafka/settings.ts) said the way the Java client reads
// them, for the tools' --producer.config / --consumer.config file.
import type { Properties } from '../stack/properties.js';

const LOGIN_MODULES: Record<string, string> = {
  PLAIN: 'org.apache.kafka.common.security.plain.PlainLoginModule',
  'SCRAM-SHA-256': 'org.apache.kafka.common.security.scram.ScramLoginModule',
  'SCRAM-SHA-512': 'org.apache.kafka.common.security.scram.ScramLoginModule',
};

/** A JAAS option value: quoted, its backslashes and quotes escaped. */
const jaasQuoted = (value: string) => `"${value.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`;

/**
 * The Java client's properties for these librdkafka connection properties. Throws an Error naming a
 * property the Java client would need said otherwise (a client certificate, OAUTHBEARER, a
 * KAFKA_CONFIG_FILE's own properties): a baseline that cannot log in would only fail later.
 */
export function jvmClientProperties(librdkafka: Readonly<Record<string, string>>): Properties {
  const java: Properties = {};
  const { 'sasl.username': username, 'sasl.password': password, ...rest } = librdkafka;
  for (const [property, value] of Object.entries(rest)) {
    if (property === 'security.protocol' || property === 'sasl.mechanism') {
      java[property] = value.toUpperCase();
    } else if (property === 'ssl.ca.location') {
      java['ssl.truststore.type'] = 'PEM';
      java['ssl.truststore.location'] = value;
    } else {
      throw new Error(
        `Kafka's JVM perf tools are not given librdkafka's ${property} here: run the benchmark against a cluster reached without it`,
      );
    }
  }
  if (username !== undefined && password !== undefined) {
    const mechanism = String(java['sasl.mechanism'] ?? '');
    const module = LOGIN_MODULES[mechanism];
    if (module === undefined)
      throw new Error(`Kafka's JVM perf tools are not given a SASL ${mechanism || 'login'} here`);
    java['sasl.jaas.config'] =
      `${module} required username=${jaasQuoted(username)} password=${jaasQuoted(password)};`;
  }
  return java;
}
