// The two Kafka clients of a stream app instance as ports (what the runner asks of them, so unit tests
// can script them with a fake), and their librdkafka implementation: a static, cooperative-sticky,
// read_committed consumer and the instance's transactional producer (eos-producer.ts).
import type { MessageHeader } from '@confluentinc/kafka-javascript';
import { withAdmin } from '../kafka/admin.js';
import { maxMessageBytesOf } from '../kafka/batch-size.js';
import {
  call,
  connect,
  createConsumer,
  disconnect,
  ERRORS,
  type KafkaSettings,
  type RdConsumer,
} from '../kafka/rdkafka.js';
import { EosProducer, type OutRecord } from './eos-producer.js';
import { retry } from './retry.js';

export interface TopicPartition {
  topic: string;
  partition: number;
}

/** A record as the consumer hands it over (librdkafka's Message has this shape). */
export interface ConsumedMessage {
  topic: string;
  partition: number;
  offset: number;
  key?: Buffer | string | null | undefined;
  value: Buffer | null;
  timestamp?: number | undefined;
  headers?: MessageHeader[] | undefined;
}

/** A rebalance as the consumer reports it; the runner queues it for the loop (rebalances.ts). */
export type RebalanceListener = (
  kind: 'assign' | 'revoke' | 'error',
  partitions: TopicPartition[],
  error?: unknown,
) => void;

/** What the runner asks of its consumer. Only the poll loop (and what it awaits) calls it. */
export interface StreamConsumer {
  connect(): Promise<void>;
  subscribe(topics: string[]): void;
  /** Up to `max` records; waits up to `waitMs` for the first one only. */
  consume(max: number, waitMs: number): Promise<ConsumedMessage[]>;
  incrementalAssign(partitions: TopicPartition[]): void;
  incrementalUnassign(partitions: TopicPartition[]): void;
  /** Inside a revoke callback: whether the partitions were lost (not given back in order). */
  assignmentLost(): boolean;
  pause(partitions: TopicPartition[]): void;
  resume(partitions: TopicPartition[]): void;
  seek(partition: TopicPartition, offset: number): Promise<void>;
  /** The group's committed offsets (offset undefined or negative: none). */
  committed(
    partitions: TopicPartition[],
    timeoutMs: number,
  ): Promise<(TopicPartition & { offset?: number })[]>;
  /** The next offset the consumer fetches for each partition, where known. */
  position(partitions: TopicPartition[]): (TopicPartition & { offset?: number })[];
  highWatermark(topic: string, partition: number): number | undefined;
  /** Asks the partition leader for a partition's end (any topic): checkpoints of state on disk. */
  queryHighWatermark?(topic: string, partition: number, timeoutMs: number): Promise<number>;
  onError(listener: (error: unknown) => void): void;
  disconnect(timeoutMs: number): Promise<void>;
}

/** What the runner asks of its transactional producer (eos-producer.ts is the real one). */
export interface StreamProducer {
  readonly inTransaction: boolean;
  /** Connects and fences any earlier producer of the same transactional id. */
  open(): Promise<void>;
  onError(listener: (error: unknown) => void): void;
  begin(): Promise<void>;
  /** Undefined: the record was taken at once, nothing to wait for (the common case). */
  send(record: OutRecord): Promise<void> | undefined;
  /** Sends the records lingering in the client now, without waiting (eos-producer.ts sendNow). */
  sendNow(): void;
  /** Adds consumed offsets to the transaction, with the consumer's group metadata (KIP-447). */
  sendOffsets(
    offsets: { topic: string; partition: number; offset: number }[],
    timeoutMs: number,
  ): Promise<void>;
  commit(timeoutMs: number): Promise<void>;
  abort(timeoutMs: number): Promise<void>;
  close(): Promise<void>;
}

export interface StreamClients {
  consumer: StreamConsumer;
  /** A new transactional producer, not open yet. */
  /** A producer for records up to the largest limit, in batches under the smallest (eos-producer.ts). */
  newProducer(maxMessageBytes: number, smallestTopicLimit?: number): StreamProducer;
  /** The largest record each topic accepts (its max.message.bytes, broker default included). */
  maxMessageBytes(topics: readonly string[]): Promise<Map<string, number>>;
}

export interface StreamClientOptions {
  settings: KafkaSettings;
  /** The consumer group. */
  groupId: string;
  /** `<appId>-<instanceId>`: group.instance.id and transactional.id. */
  memberId: string;
  transactionTimeoutMs: number;
  sessionTimeoutMs: number;
  maxBytesPerPartition: number;
  onRebalance: RebalanceListener;
}

export type CreateStreamClients = (options: StreamClientOptions) => StreamClients;

/** How long a seek may take before its partition's position counts as unknown. */
const SEEK_TIMEOUT_MS = 5_000;

/**
 * A tenth of the session timeout, at least 500 ms (no heartbeat storm with long sessions), and never
 * more than a third of it (Kafka's guidance): a short session (PROCESSOR_SESSION_TIMEOUT_MS of 1 s)
 * still gets three heartbeats before the coordinator gives up on a member that is alive.
 */
export function heartbeatIntervalMs(sessionTimeoutMs: number): number {
  return Math.min(Math.max(500, Math.floor(sessionTimeoutMs / 10)), Math.floor(sessionTimeoutMs / 3));
}

/** The librdkafka clients. */
export const librdkafkaClients: CreateStreamClients = (options) => {
  const { settings, groupId, memberId, transactionTimeoutMs, sessionTimeoutMs } = options;
  const raw = createConsumer(
    settings,
    {
      'group.id': groupId,
      // Static membership: a restarted instance (same id) gets its partitions back without a rebalance.
      'group.instance.id': memberId,
      'partition.assignment.strategy': 'cooperative-sticky',
      'isolation.level': 'read_committed',
      'enable.auto.commit': false,
      'enable.auto.offset.store': false,
      'session.timeout.ms': sessionTimeoutMs,
      'heartbeat.interval.ms': heartbeatIntervalMs(sessionTimeoutMs),
      // Restores run beside the loop on their own group-less consumers while the loop keeps polling
      // (the restoring partitions paused), so a long restore never exceeds this: the default stays.
      'max.poll.interval.ms': 300_000,
      'max.partition.fetch.bytes': options.maxBytesPerPartition,
      'fetch.wait.max.ms': 50,
      'allow.auto.create.topics': false,
      rebalance_cb: (error: { code: number } | undefined, assignment: TopicPartition[]) => {
        const partitions = assignment.map(({ topic, partition }) => ({ topic, partition }));
        if (error?.code === ERRORS.ERR__ASSIGN_PARTITIONS) options.onRebalance('assign', partitions);
        else if (error?.code === ERRORS.ERR__REVOKE_PARTITIONS) options.onRebalance('revoke', partitions);
        else options.onRebalance('error', partitions, error);
      },
    } as never,
    'stream-consumer',
    // A partition nothing was committed for starts at its beginning: every raw record is processed.
    { 'auto.offset.reset': 'earliest' },
  ) as RdConsumer;
  raw.setDefaultIsTimeoutOnlyForFirstMessage(true);

  const consumer: StreamConsumer = {
    connect: async () => {
      await connect(raw);
    },
    subscribe: (topics) => raw.subscribe(topics),
    consume: (max, waitMs) => {
      // The binding reads the wait from this field on each call.
      raw.setDefaultConsumeTimeout(waitMs);
      return call<ConsumedMessage[]>('consume', (cb) => raw.consume(max, cb as never));
    },
    incrementalAssign: (partitions) => raw.incrementalAssign(partitions),
    incrementalUnassign: (partitions) => raw.incrementalUnassign(partitions),
    assignmentLost: () => raw.assignmentLost(),
    pause: (partitions) => raw.pause(partitions),
    resume: (partitions) => raw.resume(partitions),
    // The binding turns a timeout under 10 ms into 10 ms, and a seek not done by then fails as "timed
    // out" with the partition's position unknown: on a loaded machine that is common. The seek waits on
    // the binding's worker thread, not the loop's: give it time (a failure still hands over to new clients).
    seek: (tp, offset) => call('seek', (cb) => raw.seek({ ...tp, offset }, SEEK_TIMEOUT_MS, cb)),
    committed: (partitions, timeoutMs) =>
      call<(TopicPartition & { offset?: number })[]>('committed', (cb) =>
        raw.committed(partitions, timeoutMs, cb as never),
      ),
    position: (partitions) => raw.position(partitions),
    highWatermark: (topic, partition) => {
      const { highOffset } = raw.getWatermarkOffsets(topic, partition);
      return typeof highOffset === 'number' && highOffset >= 0 ? highOffset : undefined;
    },
    queryHighWatermark: (topic, partition, timeoutMs) =>
      call<{ highOffset: number }>('queryWatermarkOffsets', (cb) =>
        raw.queryWatermarkOffsets(topic, partition, timeoutMs, cb as never),
      ).then(({ highOffset }) => highOffset),
    onError: (listener) => raw.on('event.error', listener),
    disconnect: (timeoutMs) => disconnect(raw, timeoutMs),
  };

  return {
    consumer,
    newProducer: (maxMessageBytes, smallestTopicLimit) => {
      const eos = new EosProducer({
        settings,
        transactionalId: memberId,
        transactionTimeoutMs,
        maxMessageBytes,
        smallestTopicLimit,
      });
      return {
        get inTransaction() {
          return eos.inTransaction;
        },
        open: () => eos.open(),
        onError: (listener) => eos.onError(listener),
        begin: () => eos.begin(),
        send: (record) => eos.send(record),
        sendNow: () => eos.sendNow(),
        sendOffsets: (offsets, timeoutMs) => eos.sendOffsets(offsets, raw, timeoutMs),
        commit: (timeoutMs) => eos.commit(timeoutMs),
        abort: (timeoutMs) => eos.abort(timeoutMs),
        close: () => eos.close(),
      };
    },
    maxMessageBytes: async (topics) => {
      const configs = await retry(() => withAdmin(settings, (admin) => admin.topicConfigs(topics)), {
        retries: 5,
        initialDelayMs: 500,
      });
      const limits = new Map<string, number>();
      for (const topic of topics) {
        limits.set(topic, maxMessageBytesOf(configs.get(topic)) ?? 1_048_588);
      }
      return limits;
    },
  };
};
