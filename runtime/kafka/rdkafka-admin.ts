// The admin port on librdkafka's AdminClient (native API), with topic and broker configs read by
// describe-configs.ts, since the binding has no describeConfigs.
import type {
  GroupResults,
  LibrdKafkaError,
  Metadata,
  TopicDescription as RdTopicDescription,
} from '@confluentinc/kafka-javascript';
import type { BrokerNode, PartitionWatermarks, TopicAdmin, TopicDescription } from './admin.js';
import { describeConfigs, RESOURCE_TYPE } from './describe-configs.js';
import { awaitLogin, isLoginRefused } from './login.js';
import {
  call,
  connect,
  createAdmin,
  createConsumer,
  disconnect,
  ERRORS,
  KafkaError,
  type KafkaSettings,
  OffsetSpec,
  type RdAdminClient,
  securityFailure,
  toKafkaError,
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
  // Wrong credentials or an untrusted certificate fail every request at once, instead of as timeouts.
  const refused = securityFailure(client as unknown as NodeJS.EventEmitter);
  // Every request waits for the login first: a refused one then leaves no long request running.
  let loggedIn: Promise<void> | undefined;
  /** The requests the binding is still waiting for, in its worker threads. */
  const running = new Set<Promise<unknown>>();
  const login = (): Promise<void> => {
    loggedIn ??= awaitLogin(client, refused, { timeoutMs }).catch((error: unknown) => {
      // A cluster out of reach now (a broker restarting) may answer the next request: only a refusal,
      // which no retry changes, is remembered.
      if (!isLoginRefused(error)) loggedIn = undefined;
      throw error;
    });
    return loggedIn;
  };
  const ask = async <T = void>(context: string, run: Parameters<typeof call<T>>[1]): Promise<T> => {
    await login();
    const request = call<T>(context, run);
    running.add(request);
    void request.then(
      () => running.delete(request),
      () => running.delete(request),
    );
    return Promise.race([request, refused]);
  };
  const configOptions = {
    bootstrap: settings.brokers,
    clientId: settings.clientId,
    timeoutMs,
    ...(settings.properties ? { properties: settings.properties } : {}),
  };

  const describeTopics = async (names: readonly string[]): Promise<TopicDescription[]> => {
    if (names.length === 0) return [];
    const found = await ask<RdTopicDescription[]>('describe topics', (cb) =>
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
    const metadata = await ask<Metadata>('metadata', (cb) =>
      client.getMetadata({ allTopics: false, timeout: timeoutMs }, cb),
    );
    return metadata.brokers.map(({ id, host, port }) => ({ id, host, port }));
  };

  return {
    close() {
      // Disconnecting waits for the lock a running request holds, blocking this thread: disconnect once
      // they are over (at once, usually; after a refused login the login wait has already ended them).
      void Promise.allSettled([loggedIn, ...running]).then(() => client.disconnect());
    },

    listTopics: () => ask<string[]>('list topics', (cb) => client.listTopics({ timeout: timeoutMs }, cb)),

    describeTopics,

    async createTopics(topics) {
      // librdkafka's binding creates one topic per call: ask for all at once, then report the first failure.
      await settleAll(
        topics.map(async (topic) => {
          try {
            await ask(`create topic "${topic.name}"`, (cb) =>
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
            await ask(`delete topic "${name}"`, (cb) => client.deleteTopic(name, timeoutMs, cb));
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
      const partitions = await partitionsOf(topic, 'watermarks');
      const [lows, highs] = await Promise.all([
        listOffsets(topic, partitions, OffsetSpec.EARLIEST),
        listOffsets(topic, partitions, OffsetSpec.LATEST),
      ]);
      return partitions.map(
        (partition): PartitionWatermarks => ({
          partition,
          low: lows.get(partition) ?? 0,
          high: highs.get(partition) ?? 0,
        }),
      );
    },

    async offsetsForTime(topic, time) {
      const partitions = await partitionsOf(topic, 'offsets for a time');
      const found = await listOffsets(topic, partitions, new OffsetSpec(time));
      return partitions.map((partition) => ({ partition, offset: found.get(partition) ?? -1 }));
    },

    async committedOffsets(groupId, topic) {
      const partitions = await partitionsOf(topic, 'committed offsets');
      const [group] = await ask<GroupResults[]>(`committed offsets of group "${groupId}"`, (cb) =>
        client.listConsumerGroupOffsets(
          [{ groupId, partitions: partitions.map((partition) => ({ topic, partition })) }],
          { timeout: timeoutMs },
          cb,
        ),
      );
      if (group?.error) throw asKafkaError(group.error, `committed offsets of group "${groupId}"`);
      return new Map(
        (group?.partitions ?? [])
          .filter((p) => p.topic === topic && p.offset >= 0)
          .map((p) => [p.partition, BigInt(p.offset)]),
      );
    },

    async commitOffsets(groupId, topic, offsets) {
      if (offsets.length === 0) return;
      // A consumer that never subscribes commits as a "simple" member (generation -1), which the
      // coordinator accepts while the group has no running member.
      const consumer = createConsumer(
        settings,
        { 'group.id': groupId, 'enable.auto.commit': false } as never,
        `${component}-commit`,
      );
      await connect(consumer, timeoutMs);
      try {
        try {
          consumer.commitSync(
            offsets.map(({ partition, offset }) => ({ topic, partition, offset: Number(offset) })),
          );
        } catch (error) {
          throw toKafkaError(error, `commit offsets of group "${groupId}"`);
        }
      } finally {
        await disconnect(consumer);
      }
    },
  };

  async function partitionsOf(topic: string, what: string): Promise<number[]> {
    const [description] = await describeTopics([topic]);
    if (description === undefined)
      throw asKafkaError(
        { code: ERRORS.ERR_UNKNOWN_TOPIC_OR_PART, message: 'Broker: Unknown topic or partition' },
        `${what} of topic "${topic}"`,
      );
    return description.partitions.map(({ partition }) => partition);
  }

  /**
   * One offset per partition, as `spec` asks (earliest, latest, or the first at a time). Asked again
   * for a moment while leadership settles: a topic just created (or a broker just restarted) has
   * leaders in its metadata before the brokers answer for them.
   */
  async function listOffsets(
    topic: string,
    partitions: readonly number[],
    spec: InstanceType<typeof OffsetSpec>,
  ): Promise<Map<number, number>> {
    for (let attempt = 1; ; attempt++) {
      const found = await ask<{ partition: number; offset: number; error?: LibrdKafkaError }[]>(
        `list offsets of topic "${topic}"`,
        (cb) =>
          client.listOffsets(
            partitions.map((partition) => ({ topic, partition, offset: spec })),
            { timeout: timeoutMs },
            cb,
          ),
      );
      const failed = found.find((o) => o.error);
      if (failed?.error === undefined) return new Map(found.map((o) => [o.partition, o.offset]));
      if (attempt >= 10 || !LEADERSHIP_SETTLING.has(failed.error.code))
        throw asKafkaError(failed.error, `list offsets of "${topic}" [${failed.partition}]`);
      await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
    }
  }
}

/** Broker answers that mean "ask again shortly": the partition's leadership is still moving. */
const LEADERSHIP_SETTLING = new Set<number>([
  ERRORS.ERR_NOT_LEADER_FOR_PARTITION,
  ERRORS.ERR_LEADER_NOT_AVAILABLE,
  ERRORS.ERR_UNKNOWN_TOPIC_OR_PART,
  // "Leader epoch is newer than broker epoch": the client saw the new leader before the broker did.
  ERRORS.ERR_UNKNOWN_LEADER_EPOCH,
  ERRORS.ERR_FENCED_LEADER_EPOCH,
]);

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
