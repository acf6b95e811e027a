// The one transactional producer of a stream app instance (KIP-447): `transactional.id` =
// `<appId>-<instanceId>`, its transactions begun lazily, offsets sent with the consumer's group
// metadata so a zombie's commit is refused by the group coordinator.
import type { KafkaConsumer, MessageHeader, Producer } from '@confluentinc/kafka-javascript';
import { batchBytesFor, messageBytesFor } from '../kafka/batch-size.js';
import {
  call,
  connect,
  createProducer,
  disconnect,
  ERRORS,
  type KafkaSettings,
  toKafkaError,
} from '../kafka/rdkafka.js';

export interface EosProducerOptions {
  settings: KafkaSettings;
  transactionalId: string;
  /** Short (~10 s): a dead owner's open transaction blocks read_committed readers this long at most. */
  transactionTimeoutMs: number;
  /** The largest record any sink topic accepts (librdkafka refuses larger ones before sending). */
  maxMessageBytes: number;
  /**
   * The smallest max.message.bytes of the topics it writes: its batches stay under it (batch-size.ts).
   */
  smallestTopicLimit?: number;
  /** How long a record may wait in the client for more to batch with (tests lengthen it): EOS_LINGER_MS. */
  lingerMs?: number;
}

/**
 * librdkafka's linger.ms for the transactional producer. While a stage catches up, the records of a
 * poll wait up to this long to fill larger batches: at 5 ms the broker spent 12–14 µs of CPU per routed
 * event on many small produce requests (48 partitions written), at 50 ms 5–7, and the router made 12 %
 * more events/s at 8 % less CPU per event (docs/benchmarks.md, "The transactional producer's linger,
 * again"). Live, nothing waits for it: sendNow() sends a poll's records once no backlog is left.
 */
export const EOS_LINGER_MS = 50;
/**
 * How long a sendNow() holds its flush (a worker thread of the binding's pool) at most: long enough for
 * librdkafka's broker threads to wake and send, short enough that a broker gone away holds no thread.
 */
const SEND_NOW_TIMEOUT_MS = 100;

export interface OutRecord {
  topic: string;
  partition: number | undefined;
  key: Buffer | null;
  value: Buffer | null;
  timestamp: number;
  headers?: Readonly<Record<string, string>> | undefined;
}

function headersOf(record: OutRecord): MessageHeader[] | undefined {
  return record.headers === undefined
    ? undefined
    : Object.entries(record.headers).map(([k, v]) => ({ [k]: v }));
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export class EosProducer {
  #producer: Producer | undefined;
  #open = false;
  /** When the open transaction began (its age tells a timed-out transaction from a real fencing). */
  openedAt = 0;

  constructor(private readonly options: EosProducerOptions) {}

  get inTransaction(): boolean {
    return this.#open;
  }

  /** Connects and initialises transactions: fences any previous producer of our id, aborts its open transaction. */
  async open(): Promise<void> {
    const { settings, transactionalId, transactionTimeoutMs, maxMessageBytes, smallestTopicLimit } =
      this.options;
    const producer = createProducer(
      settings,
      {
        'transactional.id': transactionalId,
        'enable.idempotence': true,
        'transaction.timeout.ms': transactionTimeoutMs,
        // A transaction's records are flushed by commitTransaction; no per-record delivery events.
        dr_cb: false,
        // Nobody sees a record before its transaction commits, and a commit flushes what lingers, but
        // only after one produce round trip more with the poll loop stopped: sendNow() sends a live
        // stage's records as soon as its poll is processed, so the linger only batches a backlog.
        'linger.ms': this.options.lingerMs ?? EOS_LINGER_MS,
        'message.max.bytes': messageBytesFor(maxMessageBytes),
        'batch.size': batchBytesFor(smallestTopicLimit),
      } as never,
      'eos-producer',
    );
    try {
      await connect(producer);
      await call('initTransactions', (cb) => producer.initTransactions(transactionTimeoutMs + 20_000, cb));
    } catch (error) {
      await disconnect(producer);
      throw error;
    }
    this.#producer = producer;
    this.#open = false;
  }

  /** Listens for the producer's errors (a fatal one stops the app). */
  onError(listener: (error: unknown) => void): void {
    this.#producer?.on('event.error', listener);
  }

  async #begin(): Promise<void> {
    if (this.#open) return;
    const producer = this.#require();
    await call('beginTransaction', (cb) => producer.beginTransaction(cb));
    this.#open = true;
    this.openedAt = Date.now();
  }

  #require(): Producer {
    if (this.#producer === undefined) throw new Error('the transactional producer is closed');
    return this.#producer;
  }

  /**
   * Sends a record in the open transaction (begun now if none is open). Undefined when librdkafka took it
   * at once (the common case: a transaction open, room in its queue), so the caller waits for nothing;
   * else a promise that settles once it did.
   */
  send(record: OutRecord): Promise<void> | undefined {
    if (!this.#open) return this.#sendWaiting(record);
    const headers = headersOf(record);
    try {
      this.#produce(record, headers);
      return undefined;
    } catch (error) {
      const e = toKafkaError(error, `produce to ${record.topic}`);
      if (e.code !== ERRORS.ERR__QUEUE_FULL) throw e;
      return this.#sendWaiting(record);
    }
  }

  #produce(record: OutRecord, headers: MessageHeader[] | undefined): void {
    this.#unsent = true;
    this.#require().produce(
      record.topic,
      record.partition ?? null,
      record.value,
      record.key,
      record.timestamp,
      undefined,
      headers,
    );
  }

  async #sendWaiting(record: OutRecord): Promise<void> {
    await this.#begin();
    const producer = this.#require();
    const headers = headersOf(record);
    const started = Date.now();
    for (;;) {
      try {
        this.#produce(record, headers);
        return;
      } catch (error) {
        const e = toKafkaError(error, `produce to ${record.topic}`);
        // The local queue is full: librdkafka drains it in the background; wait and try again, for
        // no longer than half the transaction's time (the poll loop's waits stay under its stall limit).
        if (e.code !== ERRORS.ERR__QUEUE_FULL || Date.now() - started > this.options.transactionTimeoutMs / 2)
          throw e;
        producer.poll();
        await sleep(5);
      }
    }
  }

  /** A sendNow() flush is under way (one at a time: each holds a thread of the binding's pool). */
  #sending = false;
  /** Records produced since the last sendNow(): an idle poll has nothing to send. */
  #unsent = false;

  /**
   * Sends the open transaction's lingering records now, without waiting for them: librdkafka ignores
   * linger.ms while a flush runs. Its outcome is left to the commit, which flushes again and reports
   * any failure of these records; so a flush that times out or fails is not an error here (the next
   * call tries again).
   */
  sendNow(): void {
    const producer = this.#producer;
    if (this.#sending || !this.#unsent || !this.#open || producer === undefined) return;
    this.#sending = true;
    this.#unsent = false;
    try {
      producer.flush(SEND_NOW_TIMEOUT_MS, (error) => {
        this.#sending = false;
        // Not all sent within the time (a partition's first record in a transaction waits for the
        // coordinator to add it): the rest lingers, and the next call sends it now again.
        if (error) this.#unsent = true;
      });
    } catch {
      // Not connected (closing): nothing to send.
      this.#sending = false;
    }
  }

  /** Begins the transaction if none is open (offsets alone still need one). */
  begin(): Promise<void> {
    return this.#begin();
  }

  /** Adds the consumed offsets (next offset to read) to the transaction, with the group metadata. */
  async sendOffsets(
    offsets: { topic: string; partition: number; offset: number }[],
    consumer: KafkaConsumer,
    timeoutMs: number,
  ): Promise<void> {
    if (offsets.length === 0) return;
    await this.#begin();
    const producer = this.#require();
    await call('sendOffsetsToTransaction', (cb) =>
      producer.sendOffsetsToTransaction(offsets, consumer, timeoutMs, cb),
    );
  }

  /**
   * Commits the open transaction within `timeoutMs`. A retriable failure (a timeout) leaves the commit in
   * progress, and calling it again is what librdkafka asks, while time is left; past that the error goes
   * to the caller, for whom the outcome is unknown.
   */
  async commit(timeoutMs: number): Promise<void> {
    if (!this.#open) return;
    const producer = this.#require();
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        await call('commitTransaction', (cb) =>
          producer.commitTransaction(Math.max(1, deadline - Date.now()), cb),
        );
        this.#open = false;
        this.#unsent = false;
        return;
      } catch (error) {
        const e = toKafkaError(error);
        if (!e.retriable || e.abortable || Date.now() >= deadline) throw e;
      }
    }
  }

  /** Aborts the open transaction, if any. */
  async abort(timeoutMs: number): Promise<void> {
    if (!this.#open) return;
    const producer = this.#require();
    await call('abortTransaction', (cb) => producer.abortTransaction(timeoutMs, cb));
    this.#open = false;
    this.#unsent = false;
  }

  /** Drops the producer (after a fencing or a fatal error, or at close). */
  async close(): Promise<void> {
    const producer = this.#producer;
    this.#producer = undefined;
    this.#open = false;
    if (producer !== undefined) await disconnect(producer);
  }
}
