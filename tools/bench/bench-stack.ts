// The stack a benchmark measures on, and how it reaches it: as the product's commands do (loadConfig,
// then kafkaSettings and registryAccess), so KAFKA_BROKERS, SCHEMA_REGISTRY_URL and the connection
// variables (KAFKA_SECURITY_PROTOCOL, KAFKA_SASL_*, KAFKA_SSL_*, KAFKA_CONFIG_FILE, SCHEMA_REGISTRY_*)
// take a benchmark to any cluster the product reaches, its child processes included.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { type Config, loadConfig } from '../../runtime/config.js';
import type { KafkaSettings } from '../../runtime/kafka/rdkafka.js';
import { checkedKafkaProperties, kafkaSettings } from '../../runtime/kafka/settings.js';
import type { Logger } from '../../runtime/log.js';
import { registryAccess } from '../../schemas/registry-access.js';
import type { CreateSerdeOptions } from '../../schemas/serde.js';
import { type Stack, startStack } from '../stack/index.js';
import { renderProperties } from '../stack/properties.js';
import { jvmClientProperties } from './jvm-client-properties.js';

export interface BenchStack {
  stack: Stack;
  /** The configuration the product's commands would load here (checked once, at start). */
  config: Config;
  /**
   * What a child process needs beside this process's environment (which it inherits, connection
   * variables included) to reach the same stack: the brokers and registry of a stack started here.
   */
  env: Record<string, string>;
  /** Settings for a Kafka client of the benchmark itself. */
  kafka(clientId: string, logger?: Logger): KafkaSettings;
  /** Options for a registry client (createSerde) of the benchmark itself. */
  registry(clientId: string): CreateSerdeOptions;
  /** With `jvmTools`: a properties file that gives Kafka's JVM perf tools the same connection (none for plaintext). */
  jvmClientConfig?: string;
  /** Stops what was started here (nothing, for a configured stack) and removes its state dir. */
  stop(): Promise<void>;
}

/**
 * KAFKA_BROKERS and SCHEMA_REGISTRY_URL when set (with the connection variables), else a local stack of
 * its own. `jvmTools`: the benchmark runs Kafka's JVM perf tools too, so a connection they cannot be
 * given stops it now rather than after its long runs.
 */
export async function startBenchStack({
  env = process.env,
  jvmTools = false,
}: {
  env?: NodeJS.ProcessEnv;
  jvmTools?: boolean;
} = {}): Promise<BenchStack> {
  const stateDir = await mkdtemp(join(tmpdir(), 'hookledger-bench-stack-'));
  let stack: Stack | undefined;
  try {
    stack = await startStack({ stateDir, env });
    const stackEnv: Record<string, string> = {
      KAFKA_BROKERS: stack.brokers.join(','),
      SCHEMA_REGISTRY_URL: stack.registryUrl,
      ...stack.clientEnv,
    };
    // A variable librdkafka or the registry client would refuse stops the benchmark now, in one line.
    const config = loadConfig({ ...env, ...stackEnv });
    const properties = checkedKafkaProperties(config);
    const access = registryAccess(config);
    let jvmClientConfig: string | undefined;
    if (jvmTools && Object.keys(properties).length > 0) {
      jvmClientConfig = join(stateDir, 'jvm-client.properties');
      // It may hold a SASL password: readable by its owner only, gone with the state dir.
      await writeFile(jvmClientConfig, renderProperties(jvmClientProperties(properties)), { mode: 0o600 });
    }
    const started = stack;
    return {
      stack,
      config,
      env: stackEnv,
      ...(jvmClientConfig ? { jvmClientConfig } : {}),
      kafka: (clientId, logger = pino({ level: 'silent' })) => kafkaSettings(config, clientId, logger),
      registry: (clientId) => ({ ...access, clientId }),
      async stop() {
        await started.stop();
        await rm(stateDir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await stack?.stop();
    await rm(stateDir, { recursive: true, force: true });
    throw error;
  }
}
