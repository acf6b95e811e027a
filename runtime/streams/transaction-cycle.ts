// The transaction cycle of a stream app instance (EOS v2): its one transactional producer, a
// transaction begun lazily with the first record, committed with the changelogs and consumed offsets
// every N records or T ms, or aborted with every partition it held rewound; a fenced producer replaced.
import { toKafkaError } from '../kafka/rdkafka.js';
import { errorFields } from '../log-error.js';
import type { OutRecord } from './eos-producer.js';
import { classifyError, StreamAppStoppedError } from './errors.js';
import { backoffDelay, retry } from './retry.js';
import { nameOf, type RunnerContext, seekTask, sleep } from './runner-context.js';
import type { StreamProducer } from './stream-clients.js';
import type { StreamTask } from './stream-task.js';

export interface TransactionCycleOptions {
  newProducer: () => StreamProducer;
  /** The transactional id (and static member id) and the instance id, for the fencing message. */
  memberId: string;
  instanceId: string;
  opTimeoutMs: number;
  commitIntervalMs: number;
  commitMaxRecords: number;
  /** A transient error in the loop is retried after this back-off, doubling up to `retryMaxMs`. */
  retryInitialMs?: number;
  retryMaxMs?: number;
  /** More fencings than this within `fencingWindowMs`: another live instance has our transactional id. */
  fencingsAllowed?: number;
  fencingWindowMs?: number;
}

export class TransactionCycle<V> {
  #producer: StreamProducer | undefined;
  #startedAt = 0;
  #records = 0;
  #fencings: number[] = [];
  #consecutiveFailures = 0;

  constructor(
    private readonly context: RunnerContext<V>,
    private readonly options: TransactionCycleOptions,
  ) {}

  get #current(): StreamProducer {
    if (this.#producer === undefined) throw new Error('the transactional producer is closed');
    return this.#producer;
  }

  get inTransaction(): boolean {
    return this.#producer?.inTransaction === true;
  }

  /** Opens the first producer (retrying transient errors); a fenced or fatal one is not installed. */
  async open(): Promise<void> {
    this.#install(await this.#openProducer());
  }

  async #openProducer(): Promise<StreamProducer> {
    const producer = this.options.newProducer();
    await retry(() => producer.open(), {
      retries: 5,
      initialDelayMs: 500,
      isRetriable: (error) =>
        !this.context.halted() && classifyError(error) !== 'fatal' && classifyError(error) !== 'fenced',
      onRetry: (error, attempt) =>
        this.context.log.warn(
          { ...errorFields(error), attempt },
          'transactional producer did not start; retrying',
        ),
    }).catch(async (error: unknown) => {
      await producer.close();
      throw error;
    });
    return producer;
  }

  #install(producer: StreamProducer): void {
    this.#producer = producer;
    producer.onError((error) => {
      const e = toKafkaError(error, 'producer');
      if (classifyError(e) === 'fatal' && !e.fatal) this.context.stop(e);
      else this.context.log.debug({ err: error }, 'producer error');
    });
  }

  /** Begins the transaction if none is open. */
  async begin(): Promise<void> {
    if (this.inTransaction) return;
    await this.#current.begin();
    this.#startedAt = Date.now();
  }

  /** One more input record in the open transaction. */
  counted(): void {
    this.#records++;
  }

  send(record: OutRecord): Promise<void> {
    return this.#current.send(record);
  }

  /** Whether the open transaction is due: enough records, or old enough. */
  due(now = Date.now()): boolean {
    return (
      this.inTransaction &&
      (this.#records >= this.options.commitMaxRecords ||
        now - this.#startedAt >= this.options.commitIntervalMs)
    );
  }

  /** A cycle of the loop went through: the back-off of transient failures starts again. */
  succeeded(): void {
    this.#consecutiveFailures = 0;
  }

  #dirtyTasks(): StreamTask<V>[] {
    return [...this.context.tasks.values()].filter((t) => t.dirty);
  }

  /** Commits the open transaction: changelogs, consumed offsets (with the group metadata), then EndTxn. */
  async commit(): Promise<void> {
    const producer = this.#current;
    if (!producer.inTransaction) return;
    const { instrument } = this.context;
    const started = performance.now();
    const dirty = this.#dirtyTasks().filter((t) => t.state === 'running' || t.state === 'revoked');
    for (const task of dirty) {
      for (const { topic, record } of task.takeChangelog()) {
        // Each changelog record goes to the input's partition number: the state moves with its partition.
        await producer.send({
          topic,
          partition: task.partition,
          key: Buffer.from(record.key, 'utf8'),
          value: record.value,
          timestamp: record.timestamp,
        });
      }
    }
    await producer.sendOffsets(
      dirty.map((t) => ({ topic: t.topic, partition: t.partition, offset: Number(t.nextOffset) })),
      this.options.opTimeoutMs,
    );
    await producer.commit(this.options.opTimeoutMs);
    const seconds = (performance.now() - started) / 1000;
    for (const task of dirty) {
      const records = task.records;
      task.committed(instrument);
      instrument('stream.batch', { topic: task.topic }, records);
    }
    instrument('stream.transaction', {}, seconds);
    instrument('stream.batch.seconds', {}, (Date.now() - this.#startedAt) / 1000);
    this.#records = 0;
  }

  /** Forgets the transaction's part in each task, rewinding each running one to its first record. */
  async #rewind(): Promise<StreamTask<V>[]> {
    const dirty = this.#dirtyTasks();
    this.#records = 0;
    for (const task of dirty) {
      const rewind = task.aborted();
      if (rewind !== undefined && task.state === 'running') await seekTask(this.context, task, rewind);
    }
    return dirty;
  }

  /** Aborts the open transaction and rewinds every partition it held to its first record. */
  async abort(reason: string): Promise<void> {
    let dirty: StreamTask<V>[] = [];
    try {
      await this.#producer?.abort(this.options.opTimeoutMs);
    } finally {
      dirty = await this.#rewind();
      if (dirty.length > 0) {
        this.context.instrument('stream.batch.retry', {});
        this.context.log.warn({ reason, partitions: dirty.map(nameOf) }, 'transaction aborted');
      }
    }
  }

  /** The producer was fenced: forget the transaction, and go on with a new producer (unless it keeps happening). */
  async replaceProducer(error: unknown): Promise<void> {
    const now = Date.now();
    const { fencingsAllowed = 3, fencingWindowMs = 60_000, memberId, instanceId } = this.options;
    this.#fencings.push(now);
    while (this.#fencings.length > 0 && now - this.#fencings[0]! > fencingWindowMs) this.#fencings.shift();
    await this.#rewind();
    const old = this.#producer;
    this.#producer = undefined;
    await old?.close();
    if (this.#fencings.length > fencingsAllowed) {
      this.context.stop(
        new StreamAppStoppedError(
          `producer ${memberId} fenced repeatedly: another instance runs with instance id ${instanceId}`,
          { cause: error },
        ),
      );
      return;
    }
    if (this.context.halted()) return;
    this.context.log.warn(
      errorFields(error),
      'transactional producer fenced (its transaction timed out, or an instance with our id started); starting a new one',
    );
    const producer = await this.#openProducer();
    // Closed (or stopped) while it opened: it is never installed, so nothing can leak it.
    if (this.context.halted()) {
      await producer.close();
      return;
    }
    this.#install(producer);
  }

  /** A cycle of the loop failed: stop, replace the producer, or abort, rewind and back off. */
  async onFailure(error: unknown): Promise<void> {
    const kind = classifyError(error);
    if (kind === 'fatal') {
      this.context.stop(toKafkaError(error));
      return;
    }
    if (kind === 'fenced') {
      await this.replaceProducer(error);
      return;
    }
    this.#consecutiveFailures++;
    this.context.instrument('stream.batch.retry', {});
    this.context.log.warn(
      { ...errorFields(error), attempt: this.#consecutiveFailures },
      'processing failed; aborting and retrying',
    );
    try {
      await this.abort('error');
    } catch (abortError) {
      if (classifyError(abortError) === 'fatal') this.context.stop(toKafkaError(abortError));
      else await this.replaceProducer(abortError);
    }
    await sleep(
      backoffDelay(
        this.#consecutiveFailures,
        this.options.retryInitialMs ?? 200,
        this.options.retryMaxMs ?? 5_000,
      ),
    );
  }

  /** The loop ended: a graceful close commits what was processed; a failure leaves it to the abort. */
  async finish(failed: boolean): Promise<void> {
    try {
      if (this.inTransaction) {
        if (!failed) await this.commit().catch(() => this.abort('closing'));
        else await this.abort('stopping');
      }
    } catch (error) {
      this.context.log.debug({ err: error }, 'final transaction not completed');
    }
  }

  async close(): Promise<void> {
    const producer = this.#producer;
    this.#producer = undefined;
    await producer?.close();
  }
}
