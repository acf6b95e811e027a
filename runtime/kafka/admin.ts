// The admin port: the cluster operations hookledger needs (topics, their configs, brokers, watermarks),
// what a topic looks like as found, and a scoped admin connection. Built on librdkafka in rdkafka-admin.ts.
import {
  BrokerAuthenticationError,
  BrokersUnreachableError,
  DescribeConfigsError,
  UnsupportedSecurityError,
} from './describe-configs.js';
import { KafkaError, type KafkaSettings } from './rdkafka.js';
import { createTopicAdmin } from './rdkafka-admin.js';
import { ReadStalledError } from './read-to-end.js';
import type { TopicState } from './topic-spec.js';

export interface BrokerNode {
  id: number;
  host: string;
  port: number;
}

export interface PartitionDescription {
  partition: number;
  /** The leader's broker id, or -1 while the partition has none. */
  leader: number;
  replicas: number[];
  isr: number[];
}

export interface TopicDescription {
  name: string;
  partitions: PartitionDescription[];
}

export interface NewTopic {
  name: string;
  partitions: number;
  replicationFactor: number;
  configs: Readonly<Record<string, string>>;
}

export interface PartitionWatermarks {
  partition: number;
  /** The first offset still in the log. */
  low: number;
  /** The offset the next record will get. */
  high: number;
}

/** What hookledger asks of a cluster's admin API. Errors carry a numeric Kafka `code` where there is one. */
export interface TopicAdmin {
  /** Every topic's name, internal ones included. */
  listTopics(): Promise<string[]>;
  /** The named topics that exist, each with its partitions; topics that do not exist are left out. */
  describeTopics(names: readonly string[]): Promise<TopicDescription[]>;
  /**
   * Asks the controller to create the topics with their configs. Resolves once it has, which is not yet
   * once every broker knows them: wait for leaders with describeTopics (ensureTopics does). A topic that
   * already exists is not an error (someone created it first): compare what is there instead.
   */
  createTopics(topics: readonly NewTopic[]): Promise<void>;
  /** Deletes the topics; one that is already gone is not an error. */
  deleteTopics(names: readonly string[]): Promise<void>;
  /** Each topic's effective configuration (broker defaults included); throws naming any topic it cannot describe. */
  topicConfigs(names: readonly string[]): Promise<Map<string, Record<string, string>>>;
  /** The brokers the cluster has now. */
  brokers(): Promise<BrokerNode[]>;
  /** One broker's effective configuration. */
  brokerConfigs(brokerId: number): Promise<Record<string, string>>;
  /** Low and high watermarks of every partition of a topic, by partition. */
  watermarks(topic: string): Promise<PartitionWatermarks[]>;
  /**
   * Per partition, the first offset whose record time is at or after `time` (epoch ms); -1 where no
   * record is that late.
   */
  offsetsForTime(topic: string, time: number): Promise<{ partition: number; offset: number }[]>;
  /** A consumer group's committed offsets on a topic, by partition (partitions without one are absent). */
  committedOffsets(groupId: string, topic: string): Promise<Map<number, bigint>>;
  /**
   * Commits offsets for a group that has no running member (a replay's bounds, a stage's starting
   * point): librdkafka's binding has no AlterConsumerGroupOffsets, so a member-less consumer commits.
   */
  commitOffsets(
    groupId: string,
    topic: string,
    offsets: readonly { partition: number; offset: bigint }[],
  ): Promise<void>;
}

/** Connects an admin client, runs `use`, and disconnects whatever happened. */
export async function withAdmin<T>(
  settings: KafkaSettings,
  use: (admin: TopicAdmin) => Promise<T>,
): Promise<T> {
  const admin = createTopicAdmin(settings);
  try {
    return await use(admin);
  } finally {
    admin.close();
  }
}

/** How many brokers the cluster has now. */
export async function brokerCount(admin: TopicAdmin): Promise<number> {
  return (await admin.brokers()).length;
}

/** The replication factor to create topics with unless told otherwise: `preferred`, or fewer on a small cluster. */
export function defaultReplicationFactor(brokers: number, preferred = 3): number {
  return Math.max(1, Math.min(preferred, brokers));
}

/**
 * The named topics that exist, with their partition count, replication factor and effective
 * configuration (broker defaults included). Topics that do not exist are absent from the map.
 */
export async function topicStates(
  admin: TopicAdmin,
  names: readonly string[],
): Promise<Map<string, TopicState>> {
  const found = await admin.describeTopics([...new Set(names)]);
  const states = new Map<string, TopicState>();
  if (found.length === 0) return states;
  const configs = await admin.topicConfigs(found.map((t) => t.name));
  for (const topic of found) {
    states.set(topic.name, {
      name: topic.name,
      partitions: topic.partitions.length,
      replicationFactor: Math.min(...topic.partitions.map((p) => p.replicas.length)),
      configs: configs.get(topic.name) ?? {},
    });
  }
  return states;
}

/**
 * An error from the cluster or the way to it (unreachable, refused, timed out, a security protocol not
 * spoken): what a command reports in one line with the brokers, rather than as a stack.
 */
export function isClusterError(error: unknown): boolean {
  return (
    error instanceof KafkaError ||
    error instanceof DescribeConfigsError ||
    error instanceof BrokersUnreachableError ||
    error instanceof UnsupportedSecurityError ||
    error instanceof BrokerAuthenticationError ||
    error instanceof ReadStalledError
  );
}
