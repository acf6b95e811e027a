// A scripted stand-in for the stream runner's Kafka clients (stream-clients.ts) and its restore: one
// fake "cluster" holding each input partition's records and the group's committed offsets, a consumer
// whose rebalances the test triggers, producers whose open/commit/abort can be made to fail or hang, and
// restores that succeed, fail or wait. Everything the runner asks is written to one ordered `log`.
import type { OutRecord } from '../../../runtime/streams/eos-producer.js';
import type { RestoreRun } from '../../../runtime/streams/restore.js';
import type {
  ConsumedMessage,
  CreateStreamClients,
  RebalanceListener,
  StreamConsumer,
  StreamProducer,
  TopicPartition,
} from '../../../runtime/streams/stream-clients.js';
import type { StreamTask } from '../../../runtime/streams/stream-task.js';

const keyOf = ({ topic, partition }: TopicPartition) => `${topic}[${partition}]`;

interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(error: unknown): void;
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/**
 * A commit that reaches the coordinator (its records and offsets are committed) and still answers with
 * an error, as a commitTransaction that timed out after EndTxn went through.
 */
export class AppliedThenFailed {
  constructor(readonly error: Error) {}
}

/** What one scripted step does: succeed, fail with the error, or wait for the test (a Deferred). */
export type Step = undefined | Error | Deferred<void> | AppliedThenFailed;

async function play(step: Step): Promise<void> {
  if (step instanceof Error) throw step;
  if (step instanceof AppliedThenFailed) throw step.error;
  if (step !== undefined) await step.promise;
}

/** A synchronous call's scripted outcome: an error is thrown, as the binding throws it. */
function refuseIf(step: Error | undefined): void {
  if (step !== undefined) throw step;
}

export class FakeConsumer implements StreamConsumer {
  listener: RebalanceListener | undefined;
  readonly #errorListeners: ((error: unknown) => void)[] = [];
  readonly assigned = new Set<string>();
  readonly paused = new Set<string>();
  readonly #positions = new Map<string, number>();
  #lost = false;
  connected = false;

  constructor(private readonly kafka: FakeKafka) {}

  async connect(): Promise<void> {
    await play(this.kafka.connectStep);
    this.connected = true;
    this.kafka.log.push('connect');
  }
  subscribe(topics: string[]): void {
    this.kafka.log.push(`subscribe ${topics.join(',')}`);
  }
  async consume(max: number, waitMs: number): Promise<ConsumedMessage[]> {
    this.kafka.consumeWaits.push(waitMs);
    await new Promise((r) => setTimeout(r, 2));
    const step = this.kafka.consumeSteps.shift();
    if (step !== undefined) this.kafka.log.push('consume failed');
    await play(step);
    const out: ConsumedMessage[] = [];
    for (const key of this.assigned) {
      if (this.paused.has(key)) continue;
      const records = this.kafka.records.get(key) ?? [];
      let at = this.#positions.get(key) ?? 0;
      while (at < records.length && out.length < max) out.push(records[at++]!);
      this.#positions.set(key, at);
    }
    return out;
  }
  incrementalAssign(partitions: TopicPartition[]): void {
    refuseIf(this.kafka.assignSteps.shift());
    for (const tp of partitions) {
      this.assigned.add(keyOf(tp));
      this.#positions.set(keyOf(tp), this.kafka.committed.get(keyOf(tp)) ?? 0);
      this.kafka.log.push(`assign ${keyOf(tp)}`);
    }
  }
  incrementalUnassign(partitions: TopicPartition[]): void {
    refuseIf(this.kafka.unassignSteps.shift());
    for (const tp of partitions) {
      this.assigned.delete(keyOf(tp));
      this.kafka.log.push(`unassign ${keyOf(tp)}`);
    }
  }
  assignmentLost(): boolean {
    return this.#lost;
  }
  pause(partitions: TopicPartition[]): void {
    for (const tp of partitions) {
      this.paused.add(keyOf(tp));
      this.kafka.log.push(`pause ${keyOf(tp)}`);
    }
  }
  resume(partitions: TopicPartition[]): void {
    for (const tp of partitions) {
      this.paused.delete(keyOf(tp));
      this.kafka.log.push(`resume ${keyOf(tp)}`);
    }
  }
  async seek(tp: TopicPartition, offset: number): Promise<void> {
    this.kafka.log.push(`seek ${keyOf(tp)} ${offset}`);
    await play(this.kafka.seekSteps.shift());
    this.#positions.set(keyOf(tp), offset);
  }
  async committed(partitions: TopicPartition[]) {
    return partitions.map((tp) => ({ ...tp, offset: this.kafka.committed.get(keyOf(tp)) ?? -1001 }));
  }
  position(partitions: TopicPartition[]) {
    return partitions.map((tp) => ({ ...tp, offset: this.#positions.get(keyOf(tp)) }));
  }
  highWatermark(topic: string, partition: number): number | undefined {
    // librdkafka knows an assigned partition's end after its first fetch, records or not.
    const key = keyOf({ topic, partition });
    return this.kafka.records.get(key)?.length ?? (this.assigned.has(key) ? 0 : undefined);
  }
  onError(listener: (error: unknown) => void): void {
    this.#errorListeners.push(listener);
  }
  async disconnect(): Promise<void> {
    this.connected = false;
    this.kafka.log.push('disconnect');
  }

  /** librdkafka's rebalance callback, as it fires during a poll. */
  rebalance(kind: 'assign' | 'revoke', partitions: TopicPartition[], lost = false): void {
    this.#lost = lost;
    try {
      this.listener?.(kind, partitions);
    } finally {
      this.#lost = false;
    }
  }
  emitError(error: unknown): void {
    for (const listener of this.#errorListeners) listener(error);
  }
}

export class FakeProducer implements StreamProducer {
  #inTransaction = false;
  isOpen = false;
  readonly #pendingOffsets = new Map<string, number>();
  #pendingSends: OutRecord[] = [];

  constructor(
    private readonly kafka: FakeKafka,
    readonly id: number,
    /** What the runner sized it for: the largest record, and the smallest topic limit (its batches). */
    readonly sizedFor: { maxMessageBytes: number; smallestTopicLimit: number | undefined } = {
      maxMessageBytes: 1_000_000,
      smallestTopicLimit: undefined,
    },
  ) {}

  get inTransaction(): boolean {
    return this.#inTransaction;
  }
  async open(): Promise<void> {
    this.kafka.log.push(`open #${this.id}`);
    await play(this.kafka.openSteps.shift());
    this.isOpen = true;
  }
  onError(): void {}
  async begin(): Promise<void> {
    if (!this.isOpen) throw new Error(`producer #${this.id} is not open`);
    this.#inTransaction = true;
    this.kafka.log.push('begin');
  }
  async send(record: OutRecord): Promise<void> {
    if (!this.isOpen) throw new Error(`producer #${this.id} is not open`);
    this.#inTransaction = true;
    this.kafka.sent.push(record);
    this.#pendingSends.push(record);
    this.kafka.log.push(`send ${record.topic}`);
  }
  sendNow(): void {
    this.kafka.sentNowAt.push(this.kafka.sent.length);
  }
  async sendOffsets(offsets: { topic: string; partition: number; offset: number }[]): Promise<void> {
    await play(this.kafka.sendOffsetsSteps.shift());
    for (const o of offsets) this.#pendingOffsets.set(keyOf(o), o.offset);
    this.kafka.log.push(`offsets ${offsets.map((o) => `${keyOf(o)}=${o.offset}`).join(' ')}`);
  }
  async commit(): Promise<void> {
    this.kafka.log.push('commit');
    const step = this.kafka.commitSteps.shift();
    if (!(step instanceof AppliedThenFailed)) await play(step);
    for (const [key, offset] of this.#pendingOffsets) this.kafka.committed.set(key, offset);
    this.#pendingOffsets.clear();
    this.kafka.output.push(...this.#pendingSends.splice(0));
    this.kafka.log.push('committed');
    // Applied at the coordinator, yet the call fails: the producer still counts the commit as under way.
    if (step instanceof AppliedThenFailed) throw step.error;
    this.#inTransaction = false;
  }
  async abort(): Promise<void> {
    this.kafka.log.push('abort');
    await play(this.kafka.abortSteps.shift());
    this.#pendingOffsets.clear();
    this.#pendingSends = [];
    this.#inTransaction = false;
  }
  async close(): Promise<void> {
    if (this.isOpen) this.kafka.log.push(`close #${this.id}`);
    this.isOpen = false;
    this.#inTransaction = false;
  }
}

export interface FakeRestoreRun {
  partitions: string[];
  cancelled: boolean;
  at: number;
}

export class FakeKafka {
  readonly log: string[] = [];
  /** Each input partition's records, by `topic[partition]`: offset = index. */
  readonly records = new Map<string, ConsumedMessage[]>();
  readonly committed = new Map<string, number>();
  /** Every record sent, aborted transactions' included. */
  readonly sent: OutRecord[] = [];
  /** The records of committed transactions. */
  readonly output: OutRecord[] = [];
  /** At each sendNow() of a producer, how many records had been sent (kept out of the log). */
  readonly sentNowAt: number[] = [];
  readonly producers: FakeProducer[] = [];
  readonly consumer = new FakeConsumer(this);
  readonly restores: FakeRestoreRun[] = [];
  /** Scripted outcomes, one per call, in order (then success). */
  openSteps: Step[] = [];
  commitSteps: Step[] = [];
  /** sendOffsetsToTransaction: a round trip, during which a rebalance callback may run. */
  sendOffsetsSteps: Step[] = [];
  abortSteps: Step[] = [];
  restoreSteps: Step[] = [];
  seekSteps: Step[] = [];
  /** incrementalAssign and incrementalUnassign (synchronous in the binding): an error is thrown. */
  assignSteps: (Error | undefined)[] = [];
  unassignSteps: (Error | undefined)[] = [];
  /** A poll's outcome: an error is what librdkafka hands the poll (a consumer error, a JoinGroup refused). */
  consumeSteps: Step[] = [];
  /** How long each poll was allowed to wait for a first record, in order. */
  readonly consumeWaits: number[] = [];
  connectStep: Step;
  /** A topic's max.message.bytes as DescribeConfigs answers it (1,000,000 when not set). */
  readonly topicLimits = new Map<string, number>();

  readonly clients: CreateStreamClients = (options) => {
    this.consumer.listener = options.onRebalance;
    return {
      consumer: this.consumer,
      newProducer: (maxMessageBytes, smallestTopicLimit) => {
        const producer = new FakeProducer(this, this.producers.length + 1, {
          maxMessageBytes,
          smallestTopicLimit,
        });
        this.producers.push(producer);
        return producer;
      },
      maxMessageBytes: async (topics) =>
        new Map(topics.map((t) => [t, this.topicLimits.get(t) ?? 1_000_000])),
    };
  };

  readonly restore = (tasks: readonly StreamTask<number>[]): RestoreRun => {
    const run: FakeRestoreRun = {
      partitions: tasks.map((t) => `${t.topic}[${t.partition}]`),
      cancelled: false,
      at: Date.now(),
    };
    this.restores.push(run);
    const step = this.restoreSteps.shift();
    const cancelled = deferred<never>();
    return {
      done: Promise.race([play(step), cancelled.promise]).then(() => ({ durationMs: 0, records: 0 })),
      cancel: () => {
        run.cancelled = true;
        cancelled.reject(new Error('restore cancelled'));
      },
    };
  };

  /** Appends records (their values) to an input partition. */
  produce(topic: string, partition: number, values: number[]): void {
    const key = keyOf({ topic, partition });
    const records = this.records.get(key) ?? [];
    this.records.set(key, records);
    for (const value of values)
      records.push({
        topic,
        partition,
        offset: records.length,
        key: `k${value}`,
        value: Buffer.from(String(value)),
        timestamp: 1_000 + records.length,
      });
  }

  get openProducers(): number {
    return this.producers.filter((p) => p.isOpen).length;
  }

  /** The values of `topic` the app committed. */
  values(topic: string): number[] {
    return this.output.filter((r) => r.topic === topic).map((r) => Number(r.value?.toString()));
  }
}
