// Admin-client helpers: a scoped admin connection, the cluster's size, and topics as they are found.
import kafkajs, { type Admin, type Kafka } from 'kafkajs';
import type { TopicState } from './topic-spec.js';

const { ConfigResourceTypes } = kafkajs;

/** Connects an admin client, runs `use`, and disconnects whatever happened. */
export async function withAdmin<T>(kafka: Kafka, use: (admin: Admin) => Promise<T>): Promise<T> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    return await use(admin);
  } finally {
    await admin.disconnect();
  }
}

/** How many brokers the cluster has now. */
export async function brokerCount(admin: Admin): Promise<number> {
  const { brokers } = await admin.describeCluster();
  return brokers.length;
}

/** The replication factor to create topics with unless told otherwise: `preferred`, or fewer on a small cluster. */
export function defaultReplicationFactor(brokers: number, preferred = 3): number {
  return Math.max(1, Math.min(preferred, brokers));
}

/**
 * The named topics that exist, with their partition count, replication factor and effective
 * configuration (broker defaults included). Topics that do not exist are absent from the map.
 */
export async function describeTopics(
  admin: Admin,
  names: readonly string[],
): Promise<Map<string, TopicState>> {
  const existing = new Set(await admin.listTopics());
  const present = [...new Set(names)].filter((name) => existing.has(name));
  const states = new Map<string, TopicState>();
  if (present.length === 0) return states;

  const [{ topics }, { resources }] = await Promise.all([
    admin.fetchTopicMetadata({ topics: present }),
    admin.describeConfigs({
      includeSynonyms: false,
      resources: present.map((name) => ({ type: ConfigResourceTypes.TOPIC, name })),
    }),
  ]);
  const configsByTopic = new Map(
    resources.map((resource) => [
      resource.resourceName,
      Object.fromEntries(resource.configEntries.map((entry) => [entry.configName, entry.configValue])),
    ]),
  );
  for (const topic of topics) {
    states.set(topic.name, {
      name: topic.name,
      partitions: topic.partitions.length,
      replicationFactor: Math.min(...topic.partitions.map((p) => p.replicas.length)),
      configs: configsByTopic.get(topic.name) ?? {},
    });
  }
  return states;
}
