// The admin port on librdkafka's AdminClient (native API), with topic and broker configs read by
// describe-configs.ts, since the binding has no describeConfigs.
import type {
  LibrdKafkaError,
  Metadata,
  TopicDescription as RdTopicDescription,
} from '@confluentinc/kafka-javascript';
import type { BrokerNode, PartitionWatermarks, TopicAdmin, TopicDescription } from './admin.js';
import { describeConfigs, RESOURCE_TYPE } from './describe-configs.js';
import {
  call,
  createAdmin,
  ERRORS,
  KafkaError,
  type KafkaSettings,
  OffsetSpec,
  type RdAdminClient,
} from './rdkafka.js';

export interface TopicAdminOptions {
  /** For each request (librdkafka's request and operation timeouts, and DescribeConfigs'). */
  timeoutMs?: number;
  component?: string;
}

/** The port on a new librdkafka admin client (it connects as it is created); `close` when done. */
export function createTopicAdmin(
  settings: KafkaSettings,
  { timeoutMs = 10_000, component = 'admin' }: TopicAdminOptions = {},
): TopicAdmin & { close(): void } {
  const client = createAdmin(settings, component) as RdAdminClient;
  const securityProtocol = settings.properties?.['security.protocol'];
  const configOptions = {
    bootstrap: settings.brokers,
    clientId: settings.clientId,
    timeoutMs,
    securityProtocol: securityProtocol === undefined ? undefined : String(securityProtocol),
  };

  const describeTopics = async (names: readonly string[]): Promise<TopicDescription[]> => {
    if (names.length === 0) return [];
    const found = await call<RdTopicDescription[]>('describe topics', (cb) =>
      client.describeTopics([...names], { timeout: timeoutMs }, cb),
    );
    return found.flatMap((topic) => {
      if (topic.error?.code === ERRORS.ERR_UNKNOWN_TOPIC_OR_PART) return [];
      if (topic.error) throw asKafkaError(topic.error, `describe topic "${topic.name}"`);
      return [
        {
          name: topic.name,
          partitions: topic.partitions
            .map((p) => ({
              partition: p.partition,
              leader: p.leader?.id ?? -1,
              replicas: p.replicas.map((node) => node.id),
              isr: p.isr.map((node) => node.id),
            }))
            .sort((a, b) => a.partition - b.partition),
        },
      ];
    });
  };

  const brokers = async (): Promise<BrokerNode[]> => {
    // Without a topic and with allTopics false, a metadata request is about the brokers only.
    const metadata = await call<Metadata>('metadata', (cb) =>
      client.getMetadata({ allTopics: false, timeout: timeoutMs }, cb),
    );
    return metadata.brokers.map(({ id, host, port }) => ({ id, host, port }));
  };

  return {
    close: () => client.disconnect(),

    listTopics: () => call<string[]>('list topics', (cb) => client.listTopics({ timeout: timeoutMs }, cb)),

    describeTopics,

    async createTopics(topics) {
      // librdkafka's binding creates one topic per call: ask for all at once, then report the first failure.
      await settleAll(
        topics.map(async (topic) => {
          try {
            await call(`create topic "${topic.name}"`, (cb) =>
              client.createTopic(
                {
                  topic: topic.name,
                  num_partitions: topic.partitions,
                  replication_factor: topic.replicationFactor,
                  config: { ...topic.configs },
                },
                timeoutMs,
                cb,
              ),
            );
          } catch (error) {
            if ((error as KafkaError).code !== ERRORS.ERR_TOPIC_ALREADY_EXISTS) throw error;
          }
        }),
      );
    },

    async deleteTopics(names) {
      await settleAll(
        names.map(async (name) => {
          try {
            await call(`delete topic "${name}"`, (cb) => client.deleteTopic(name, timeoutMs, cb));
          } catch (error) {
            if ((error as KafkaError).code !== ERRORS.ERR_UNKNOWN_TOPIC_OR_PART) throw error;
          }
        }),
      );
    },

    async topicConfigs(names) {
      const resources = [...new Set(names)].map((name) => ({ type: RESOURCE_TYPE.TOPIC, name }));
      const described = await describeConfigs(resources, configOptions);
      return new Map(described.map((r) => [r.name, r.configs]));
    },

    brokers,

    async brokerConfigs(brokerId) {
      const [described] = await describeConfigs([{ type: RESOURCE_TYPE.BROKER, name: String(brokerId) }], {
        ...configOptions,
        brokers: await brokers(),
      });
      return described!.configs;
    },

    async watermarks(topic) {
      const [description] = await describeTopics([topic]);
      if (description === undefined)
        throw asKafkaError(
          { code: ERRORS.ERR_UNKNOWN_TOPIC_OR_PART, message: 'Broker: Unknown topic or partition' },
          `watermarks of topic "${topic}"`,
        );
      const at = (spec: typeof OffsetSpec.EARLIEST) =>
        call<{ partition: number; offset: number; error?: LibrdKafkaError }[]>(
          `list offsets of topic "${topic}"`,
          (cb) =>
            client.listOffsets(
              description.partitions.map(({ partition }) => ({ topic, partition, offset: spec })),
              { timeout: timeoutMs },
              cb,
            ),
        );
      const [lows, highs] = await Promise.all([at(OffsetSpec.EARLIEST), at(OffsetSpec.LATEST)]);
      const failed = [...lows, ...highs].find((o) => o.error);
      if (failed?.error) throw asKafkaError(failed.error, `list offsets of "${topic}" [${failed.partition}]`);
      return description.partitions.map(
        ({ partition }): PartitionWatermarks => ({
          partition,
          low: lows.find((o) => o.partition === partition)?.offset ?? 0,
          high: highs.find((o) => o.partition === partition)?.offset ?? 0,
        }),
      );
    },
  };
}

/** A per-item error of an admin result (a plain `{ code, message }`) as a KafkaError. */
function asKafkaError(error: { code?: number; message?: string }, context: string): KafkaError {
  return new KafkaError(
    Object.assign(new Error(error.message ?? 'unknown error'), { code: error.code }),
    context,
  );
}

/** Waits for every operation, then throws the first failure in the given order (the others are settled). */
async function settleAll(operations: Promise<void>[]): Promise<void> {
  const outcomes = await Promise.allSettled(operations);
  const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
  if (failed) throw failed.reason;
}
