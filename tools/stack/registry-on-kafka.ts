// The registry started on a running Kafka, as the local stacks (plain and secured) do it: a failed
// registry start stops that Kafka again, and the pair stops registry first.
import { createRegistryNode, type RegistryNode, type RegistryNodeOptions } from './registry-process.js';

export interface RegistryOnKafka {
  registry: RegistryNode;
  /** Registry first: stopped the other way round, it would spend its shutdown retrying a gone broker. */
  stop(): Promise<void>;
}

/** After Kafka answers: KafkaSQL reads its journal from Kafka before the registry answers anything. */
export async function startRegistryOnKafka(
  kafka: { brokers: string[]; stop(): Promise<void> },
  options: Omit<RegistryNodeOptions, 'brokers'>,
): Promise<RegistryOnKafka> {
  let registry: RegistryNode;
  try {
    registry = await createRegistryNode({ ...options, brokers: kafka.brokers });
    await registry.start();
  } catch (error) {
    await kafka.stop();
    throw error;
  }
  return {
    registry,
    async stop() {
      await registry.stop();
      await kafka.stop();
    },
  };
}
