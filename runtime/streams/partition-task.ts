// One input partition's task: its producer, its restored stores, its processor, and its batches, each
// written as one unit (a Kafka transaction when exactly-once).
import type { Kafka, KafkaMessage, Message, Producer, TopicMessages, Transaction } from 'kafkajs';
import type { Logger } from '../log.js';
import { isFencedError, PartitionLostError } from './errors.js';
import type { ForwardOptions, InputRecord, Processor, ProcessorContext, Punctuator } from './processor.js';
import { restoreChangelog } from './restore.js';
import { retry } from './retry.js';
import type { ChangelogRecord, StateStore } from './store.js';
import type { SinkNode, SourceNode, Topology } from './topology.js';
import { type Mutex, openTransactionalProducer, transactionalIdFor } from './transactional-producers.js';

export type Guarantee = 'exactly-once' | 'at-least-once';

/** Instrumentation events of the kit (and of processors, through the context). */
export type Instrument = (event: string, labels?: Readonly<Record<string, string>>, value?: number) => void;

export interface PartitionTaskOptions<V> {
  topology: Topology<V>;
  source: SourceNode<V>;
  partition: number;
  kafka: Kafka;
  guarantee: Guarantee;
  /** Transactional ids are `<appId>-<topic>-<partition>`; the consumer group commits offsets. */
  appId: string;
  groupId: string;
  transactionTimeoutMs: number;
  /** At-least-once: the app's one idempotent producer, used one send at a time. */
  shared?: { producer: Producer; mutex: Mutex };
  logger: Logger;
  instrument: Instrument;
  /** Attempts after the first for a failing batch before the error goes up to the consumer. */
  batchRetries?: number;
}

export interface BatchInput {
  messages: readonly KafkaMessage[];
  /** batch.lastOffset(): may be past the last message (a transaction marker). */
  lastOffset: string;
  /** At-least-once: commits the consumer offset (with the group generation) after the outputs are acknowledged. */
  commitOffset?: (offset: string) => Promise<void>;
  heartbeat?: () => Promise<void>;
}

type Status = 'new' | 'opening' | 'restoring' | 'ready' | 'closed';

interface Outgoing {
  sink: SinkNode;
  key: string;
  value: unknown;
  partition: number | undefined;
  timestamp: number;
  headers: Readonly<Record<string, string>> | undefined;
}

function headersOf(message: KafkaMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(message.headers ?? {})) {
    if (value === undefined) continue;
    const first = Array.isArray(value) ? value[0] : value;
    if (first !== undefined) out[name] = first.toString();
  }
  return out;
}

export class PartitionTask<V> {
  readonly topic: string;
  readonly partition: number;
  readonly transactionalId: string;
  status: Status = 'new';
  /** The largest record timestamp seen (restore included). */
  streamTime = 0;
  #producer: Producer | undefined;
  #stores = new Map<string, StateStore>();
  #processor: Processor<V> | undefined;
  #punctuations: { intervalMs: number; last: number; run: Punctuator }[] = [];
  #outbox: Outgoing[] = [];
  /** The processor's instrumentation of the current attempt: emitted once it commits, dropped if it aborts. */
  #events: Parameters<Instrument>[] = [];
  #current: InputRecord<V> | undefined;
  #sinks: Map<string, SinkNode>;
  #needsReset = false;
  #busy: Promise<unknown> = Promise.resolve();
  readonly log: Logger;

  constructor(private readonly options: PartitionTaskOptions<V>) {
    this.topic = options.source.topic;
    this.partition = options.partition;
    this.transactionalId = transactionalIdFor(options.appId, this.topic, this.partition);
    this.#sinks = new Map(options.topology.sinks.map((s) => [s.name, s]));
    this.log = options.logger.child({ topic: this.topic, partition: this.partition });
  }

  get ready(): boolean {
    return this.status === 'ready';
  }

  /** Step 1 of an assignment: the producer (exactly-once: this fences the previous owner). */
  async open(): Promise<void> {
    this.status = 'opening';
    const { guarantee, kafka, transactionTimeoutMs } = this.options;
    if (guarantee === 'exactly-once') {
      this.#producer = await openTransactionalProducer({
        kafka,
        transactionalId: this.transactionalId,
        transactionTimeoutMs,
      });
    }
    this.#stores = new Map(
      this.options.topology.stores.map((spec) => [spec.name, spec.create(this.partition)]),
    );
    this.streamTime = 0;
    this.status = 'restoring';
  }

  /** The changelog topic of each store for this task's source topic. */
  changelogs(): { store: string; topic: string }[] {
    return this.options.topology.stores.map((spec) => ({
      store: spec.name,
      topic: spec.changelogTopic(this.topic),
    }));
  }

  /** Step 2: one changelog record (read_committed, in order). */
  restoreRecord(store: string, record: ChangelogRecord): void {
    this.#stores.get(store)!.restore(record);
    if (record.timestamp > this.streamTime) this.streamTime = record.timestamp;
  }

  /** Step 3: the state is complete; the processor starts. */
  finishRestore(): void {
    for (const store of this.#stores.values()) store.restored?.(this.streamTime);
    this.#punctuations = [];
    this.#processor = this.options.topology.processor.create();
    this.#processor.init(this.#context());
    this.status = 'ready';
    this.log.info({ streamTime: this.streamTime, ...this.#sizes() }, 'partition restored and ready');
  }

  #sizes(): Record<string, number> {
    return Object.fromEntries([...this.#stores].map(([name, store]) => [`${name}Size`, store.size]));
  }

  /** Entries held by each store (tracked ids). */
  storeSizes(): Map<string, number> {
    return new Map([...this.#stores].map(([name, store]) => [name, store.size]));
  }

  #context(): ProcessorContext {
    const task = this;
    return {
      topic: this.topic,
      partition: this.partition,
      get streamTime() {
        return task.streamTime;
      },
      forward(sinkName: string, key: string, value: unknown, options: ForwardOptions = {}) {
        const sink = task.#sinks.get(sinkName);
        if (sink === undefined)
          throw new TypeError(`no sink named ${sinkName} in ${task.options.topology.name}`);
        task.#outbox.push({
          sink,
          key,
          value,
          partition: options.partition ?? (sink.copartitioned ? task.partition : undefined),
          timestamp: options.timestamp ?? task.#current?.timestamp ?? task.streamTime,
          headers: options.headers,
        });
      },
      getStore<S extends StateStore>(name: string): S {
        const store = task.#stores.get(name);
        if (store === undefined)
          throw new TypeError(`no store named ${name} in ${task.options.topology.name}`);
        return store as S;
      },
      schedule(intervalMs: number, run: Punctuator) {
        task.#punctuations.push({ intervalMs, last: task.streamTime, run });
      },
      // Counted once per committed decision, not per attempt: a retried batch processes its records again.
      instrument(event, labels, value) {
        task.#events.push([event, labels, value]);
      },
    };
  }

  /**
   * Processes one fetched batch and writes its outputs, changelog records and input offset as one
   * unit. Retried (jittered back-off) on errors other than fencing; the stores forget an aborted
   * attempt's writes, so a retry decides from the committed state.
   */
  processBatch(batch: BatchInput): Promise<void> {
    const work = this.#busy.then(() =>
      retry(() => this.#attempt(batch), {
        retries: this.options.batchRetries ?? 8,
        initialDelayMs: 200,
        maxDelayMs: 5_000,
        isRetriable: (error) => !(error instanceof PartitionLostError) && this.status !== 'closed',
        onRetry: (error, attempt, delayMs) => {
          this.options.instrument('stream.batch.retry', { topic: this.topic });
          this.log.warn({ err: error, attempt, delayMs }, 'batch failed; retrying');
          void batch.heartbeat?.().catch(() => undefined);
        },
      }),
    );
    this.#busy = work.catch(() => undefined);
    return work;
  }

  async #attempt(batch: BatchInput): Promise<void> {
    if (this.status === 'closed') throw new PartitionLostError(this.topic, this.partition);
    if (this.#needsReset) await this.#reset();
    const before = this.streamTime;
    let transaction: Transaction | undefined;
    const started = performance.now();
    try {
      await this.#run(batch.messages);
      const topicMessages = await this.#drain();
      const next = (BigInt(batch.lastOffset) + 1n).toString();
      const txStarted = performance.now();
      if (this.options.guarantee === 'exactly-once') {
        transaction = await this.#producer!.transaction();
        if (topicMessages.length > 0) await transaction.sendBatch({ topicMessages, acks: -1 });
        await transaction.sendOffsets({
          consumerGroupId: this.options.groupId,
          topics: [{ topic: this.topic, partitions: [{ partition: this.partition, offset: next }] }],
        });
        await transaction.commit();
      } else {
        // At-least-once: outputs acknowledged first, then the offset; a crash in between repeats the
        // batch, which is harmless only because applying an event twice changes nothing.
        const { producer, mutex } = this.options.shared!;
        if (topicMessages.length > 0) await mutex.run(() => producer.sendBatch({ topicMessages, acks: -1 }));
        await batch.commitOffset?.(next);
      }
      for (const store of this.#stores.values()) store.commit();
      for (const event of this.#events) this.options.instrument(...event);
      this.#events = [];
      this.options.instrument(
        'stream.transaction',
        { topic: this.topic },
        (performance.now() - txStarted) / 1000,
      );
      this.options.instrument('stream.batch', { topic: this.topic }, batch.messages.length);
      this.options.instrument(
        'stream.batch.seconds',
        { topic: this.topic },
        (performance.now() - started) / 1000,
      );
    } catch (error) {
      for (const store of this.#stores.values()) store.rollback();
      this.#outbox = [];
      this.#events = [];
      this.streamTime = before;
      if (transaction?.isActive()) {
        await transaction.abort().catch(() => {
          this.#needsReset = true;
        });
      } else if (transaction !== undefined) {
        // The commit itself failed: whether it took effect is unknown. Start the partition over as on
        // an assignment (re-init, which completes or aborts it, then restore), so the retry sees it.
        this.#needsReset = true;
      }
      if (isFencedError(error)) {
        this.log.warn({ err: error }, 'producer fenced: the partition belongs to another instance now');
        throw new PartitionLostError(this.topic, this.partition, { cause: error });
      }
      throw error;
    }
    this.#punctuate();
    // A punctuation (expiry) acts on committed state, outside any transaction: its events go out now.
    for (const event of this.#events) this.options.instrument(...event);
    this.#events = [];
  }

  async #run(messages: readonly KafkaMessage[]): Promise<void> {
    const { source } = this.options;
    const processor = this.#processor!;
    for (const message of messages) {
      const timestamp = Number(message.timestamp);
      const value = await source.deserialize({
        topic: this.topic,
        partition: this.partition,
        offset: message.offset,
        key: message.key,
        value: message.value,
        timestamp,
      });
      const record: InputRecord<V> = {
        topic: this.topic,
        partition: this.partition,
        offset: message.offset,
        key: message.key === null ? null : message.key.toString('utf8'),
        value,
        timestamp,
        headers: headersOf(message),
      };
      if (timestamp > this.streamTime) this.streamTime = timestamp;
      this.#current = record;
      processor.process(record);
    }
    this.#current = undefined;
  }

  /** The batch's outputs and changelog records, serialized and grouped by topic. */
  async #drain(): Promise<TopicMessages[]> {
    const byTopic = new Map<string, Message[]>();
    const add = (topic: string, message: Message) => {
      const list = byTopic.get(topic) ?? [];
      byTopic.set(topic, list);
      list.push(message);
    };
    const outbox = this.#outbox;
    this.#outbox = [];
    for (const out of outbox) {
      const value = out.value === null ? null : await out.sink.serialize(out.value);
      add(out.sink.topic, {
        key: out.key,
        value,
        timestamp: String(out.timestamp),
        ...(out.partition === undefined ? {} : { partition: out.partition }),
        ...(out.headers === undefined ? {} : { headers: { ...out.headers } }),
      });
    }
    for (const { store, topic } of this.changelogs()) {
      // Each changelog record goes to the input's partition number: the partition's state moves with it.
      for (const record of this.#stores.get(store)!.takeChangelog()) {
        add(topic, {
          key: record.key,
          value: record.value,
          partition: this.partition,
          timestamp: String(record.timestamp),
        });
      }
    }
    return [...byTopic].map(([topic, messages]) => ({ topic, messages }));
  }

  #punctuate(): void {
    for (const p of this.#punctuations) {
      if (this.streamTime - p.last >= p.intervalMs) {
        p.last = this.streamTime;
        p.run(this.streamTime);
      }
    }
  }

  /** After an unknown commit outcome: as on a new assignment, producer first, then restore. */
  async #reset(): Promise<void> {
    this.log.warn('restarting the partition: producer re-initialised, state restored');
    await this.#teardown();
    await this.open();
    await this.restoreAlone();
    this.#needsReset = false;
  }

  /** Restores this task's stores by itself (an assignment restores its new tasks together). */
  async restoreAlone(): Promise<void> {
    for (const { store, topic } of this.changelogs()) {
      await restoreChangelog({
        kafka: this.options.kafka,
        topic,
        partitions: [this.partition],
        onRecord: (_p, record) => this.restoreRecord(store, record),
        logger: this.log,
        groupIdPrefix: this.options.appId,
      });
    }
    this.finishRestore();
  }

  async #teardown(): Promise<void> {
    this.#processor?.close?.();
    this.#processor = undefined;
    for (const store of this.#stores.values()) store.close?.();
    this.#stores.clear();
    const producer = this.#producer;
    this.#producer = undefined;
    await producer
      ?.disconnect()
      .catch((error: unknown) => this.log.debug({ err: error }, 'producer disconnect failed'));
  }

  /** The partition moved away or was lost: state and producer are dropped, after the batch in flight. */
  async close(): Promise<void> {
    if (this.status === 'closed') return;
    this.status = 'closed';
    await this.#busy;
    await this.#teardown();
  }
}
