// Transitional: the admin port over a kafkajs Admin, for the callers not yet moved to librdkafka (test
// harnesses, bench, replay's bounds) that still pass one to ensureTopics or replaySpecs. Delete this module,
// the kafkajs overload of withAdmin and AnyAdmin together with runtime/kafka/client.ts.
import type { Admin, Kafka } from 'kafkajs';
import type { TopicAdmin } from './admin.js';
import { RESOURCE_TYPE } from './describe-configs-codec.js';

/** The port, or (until the last kafkajs caller moves) a kafkajs Admin. */
export type AnyAdmin = TopicAdmin | Admin;

/** A kafkajs client (what createKafka returns), told from KafkaSettings. */
export function isKafkajsClient(value: unknown): value is Kafka {
  const candidate = value as Partial<Kafka> | undefined;
  return typeof candidate?.admin === 'function' && typeof candidate.producer === 'function';
}

/** The old scoped admin: kafkajs's own Admin, connected for `use` and disconnected after. */
export async function withKafkajsAdmin<T>(kafka: Kafka, use: (admin: Admin) => Promise<T>): Promise<T> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    return await use(admin);
  } finally {
    await admin.disconnect();
  }
}

/** The port itself, or the port over a kafkajs Admin. */
export function asTopicAdmin(admin: AnyAdmin): TopicAdmin {
  if (typeof (admin as Partial<Admin>).fetchTopicMetadata !== 'function') return admin as TopicAdmin;
  const kafkajs = admin as Admin;

  const describeTopics: TopicAdmin['describeTopics'] = async (names) => {
    const existing = new Set(await kafkajs.listTopics());
    const present = names.filter((name) => existing.has(name));
    if (present.length === 0) return [];
    const { topics } = await kafkajs.fetchTopicMetadata({ topics: present });
    return topics.map((topic) => ({
      name: topic.name,
      partitions: topic.partitions
        .map((p) => ({ partition: p.partitionId, leader: p.leader, replicas: p.replicas, isr: p.isr }))
        .sort((a, b) => a.partition - b.partition),
    }));
  };
  const brokers: TopicAdmin['brokers'] = async () =>
    (await kafkajs.describeCluster()).brokers.map(({ nodeId, host, port }) => ({ id: nodeId, host, port }));
  const configsOf = async (type: number, names: readonly string[]) => {
    const { resources } = await kafkajs.describeConfigs({
      includeSynonyms: false,
      resources: names.map((name) => ({ type, name })),
    });
    return new Map(
      resources.map((r) => [
        r.resourceName,
        Object.fromEntries(r.configEntries.map((e) => [e.configName, e.configValue])),
      ]),
    );
  };

  return {
    listTopics: () => kafkajs.listTopics(),
    describeTopics,
    async createTopics(topics) {
      // Resolves false when they all exist already: the port's "someone created it first".
      await kafkajs.createTopics({
        topics: topics.map((t) => ({
          topic: t.name,
          numPartitions: t.partitions,
          replicationFactor: t.replicationFactor,
          configEntries: Object.entries(t.configs).map(([name, value]) => ({ name, value })),
        })),
      });
    },
    async deleteTopics(names) {
      const existing = new Set(await kafkajs.listTopics());
      const present = names.filter((name) => existing.has(name));
      if (present.length > 0) await kafkajs.deleteTopics({ topics: present });
    },
    topicConfigs: (names) => configsOf(RESOURCE_TYPE.TOPIC, names),
    brokers,
    async brokerConfigs(brokerId) {
      return (await configsOf(RESOURCE_TYPE.BROKER, [String(brokerId)])).get(String(brokerId)) ?? {};
    },
    async watermarks(topic) {
      return (await kafkajs.fetchTopicOffsets(topic))
        .map((o) => ({ partition: o.partition, low: Number(o.low), high: Number(o.high) }))
        .sort((a, b) => a.partition - b.partition);
    },
    offsetsForTime: notBridged,
    committedOffsets: notBridged,
    commitOffsets: notBridged,
  };
}

/** Group offsets and times were never asked of the bridge's callers. */
async function notBridged(): Promise<never> {
  throw new Error('not available through the kafkajs bridge: use a librdkafka TopicAdmin');
}
