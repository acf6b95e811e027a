// The transaction cycle of a stream app instance (EOS v2): its one transactional producer, a
// transaction begun lazily with the first record, committed with the changelogs and consumed offsets
// every N records or T ms, or aborted with every running partition moved back to its first record not
// committed; a fenced producer replaced; a commit whose outcome is unknown handed to new clients.
import { toKafkaError } from '../kafka/rdkafka.js';
import { errorFields } from '../log-error.js';
import type { CheckpointWriter } from './checkpoint-writer.js';
import { CommitPolicy } from './commit-policy.js';
import type { OutRecord } from './eos-producer.js';
import {
  CommitOutcomeUnknownError,
  classifyError,
  NewClientsNeededError,
  PartitionsLostError,
  StateStoreFailedError,
  StreamAppStoppedError,
} from './errors.js';
import { backoffDelay, retry } from './retry.js';
import { nameOf, type RunnerContext, seekTask, sleep } from './runner-context.js';
import type { StreamProducer } from './stream-clients.js';
import type { StreamTask } from './stream-task.js';

export interface TransactionCycleOptions<V = unknown> {
  newProducer: () => StreamProducer;
  /**
   * Whether the topics' limits read since the producer was made call for a new one (its batches too
   * large for a lowered limit, or its largest record too small for a raised one: stream-runner.ts).
   * Asked after a failed cycle, when no transaction is open.
   */
  producerOutdated?: () => boolean;
  /** The transactional id (and static member id) and the instance id, for the fencing message. */
  memberId: string;
  instanceId: string;
  /** The broker aborts a transaction older than this: no wait of the cycle is longer. */
  transactionTimeoutMs: number;
  commitIntervalMs: number;
  /** While catching up (full batches): commit-policy.ts. */
  catchUpCommitIntervalMs: number;
  commitMaxRecords: number;
  catchUpCommitMaxRecords: number;
  /** Checkpoints of state on disk, taken after commits (none: state in memory). */
  checkpoints?: CheckpointWriter<V>;
  /** A failed batch is retried after this back-off, doubling up to `retryMaxMs` (defaults below; unit tests shorten it). */
  retryInitialMs?: number;
  retryMaxMs?: number;
}

/** A transient error in the loop is retried after this back-off, doubling up to the maximum. */
export const RETRY_INITIAL_MS = 200;
export const RETRY_MAX_MS = 5_000;
/** More fencings than this within the window: another live instance has our transactional id. */
const FENCINGS_ALLOWED = 3;
const FENCING_WINDOW_MS = 60_000;
/** A commit that starts late in the transaction still gets this long. */
const MIN_COMMIT_TIMEOUT_MS = 2_000;

export class TransactionCycle<V> {
  #producer: StreamProducer | undefined;
  #startedAt = 0;
  #records = 0;
  #fencings: number[] = [];
  #consecutiveFailures = 0;
  #lastFailure: string | undefined;
  /** Set when the loop gave up the step under way (stream-runner.ts's watchdog): see retire(). */
  #retired: Error | undefined;
  readonly #policy: CommitPolicy;

  constructor(
    private readonly context: RunnerContext<V>,
    private readonly options: TransactionCycleOptions<V>,
  ) {
    this.#policy = new CommitPolicy({
      intervalMs: options.commitIntervalMs,
      catchUpIntervalMs: options.catchUpCommitIntervalMs,
      maxRecords: options.commitMaxRecords,
      catchUpMaxRecords: options.catchUpCommitMaxRecords,
    });
  }

  get #current(): StreamProducer {
    if (this.#producer === undefined) throw new Error('the transactional producer is closed');
    return this.#producer;
  }

  /**
   * The loop gave up the step under way (a call past the stall limit) and stops. That step is left to
   * settle alone, and may resume once the loop has aborted its transaction and rewound every partition:
   * from now on it can neither begin, send nor commit, so nothing it does reaches Kafka. (Before, its
   * outputs began a new transaction that a late commit made visible, without the records' offsets or
   * state: read again by the next owner, they were written twice.)
   */
  retire(reason: Error): void {
    this.#retired ??= reason;
  }

  #live(): void {
    if (this.#retired !== undefined)
      throw new StreamAppStoppedError(
        `the step under way was given up (${this.#retired.message}): nothing more is sent`,
        { cause: this.#retired },
      );
  }

  get inTransaction(): boolean {
    return this.#producer?.inTransaction === true;
  }

  /** Failed cycles in a row, and the last one's error: readiness reports them while they are retried. */
  get failing(): { times: number; error: string } | undefined {
    return this.#consecutiveFailures === 0 || this.#lastFailure === undefined
      ? undefined
      : { times: this.#consecutiveFailures, error: this.#lastFailure };
  }

  /** Opens the first producer (retrying transient errors); a fenced or fatal one is not installed. */
  async open(): Promise<void> {
    this.#install(await this.#openProducer(5));
  }

  async #openProducer(retries: number): Promise<StreamProducer> {
    const producer = this.options.newProducer();
    await retry(() => producer.open(), {
      retries,
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
    this.#live();
    if (this.inTransaction) return;
    await this.#current.begin();
    this.#startedAt = Date.now();
  }

  /** One more input record in the open transaction. */
  counted(): void {
    this.#records++;
  }

  /** Undefined when the producer took the record at once (see StreamProducer.send). */
  send(record: OutRecord): Promise<void> | undefined {
    this.#live();
    return this.#current.send(record);
  }

  /** A poll handed over `fetched` records of at most `max` (a full batch: the stage is catching up). */
  polled(fetched: number, max: number): void {
    this.#policy.polled(fetched, max);
  }

  /**
   * A poll's records are processed. Live (no backlog behind them), their outputs go to the brokers now
   * rather than after the producer's linger, so the commit finds them sent; catching up, they linger to
   * batch with the next polls' (eos-producer.ts EOS_LINGER_MS).
   */
  processed(): void {
    if (!this.#policy.catchingUp && this.inTransaction) this.#producer?.sendNow();
  }

  /** How long the next poll may wait for a record: until the open transaction is due, at most `idleMs`. */
  pollWaitMs(idleMs: number, now = Date.now()): number {
    return this.#policy.pollWaitMs(this.inTransaction ? now - this.#startedAt : undefined, idleMs);
  }

  /**
   * The open transaction has run half its time (transactionTimeoutMs): the loop stops its batch there
   * and commits. A batch of slow records must not outlive its transaction: the broker would abort it,
   * and the same batch would come back, to be aborted again, for ever.
   */
  overdue(now = Date.now()): boolean {
    return this.inTransaction && now - this.#startedAt > this.options.transactionTimeoutMs / 2;
  }

  /** Whether the open transaction is due: enough records, or old enough (commit-policy.ts). */
  due(now = Date.now()): boolean {
    return this.inTransaction && this.#policy.due(this.#records, now - this.#startedAt);
  }

  /** A cycle of the loop went through with nothing left uncommitted: the back-off starts again. */
  succeeded(): void {
    this.#consecutiveFailures = 0;
    this.#lastFailure = undefined;
  }

  /** What is left of the transaction's time: the broker aborts it after that, so no call waits longer. */
  #remainingMs(): number {
    const age = this.inTransaction ? Date.now() - this.#startedAt : 0;
    return Math.max(MIN_COMMIT_TIMEOUT_MS, this.options.transactionTimeoutMs - age);
  }

  #dirtyTasks(): StreamTask<V>[] {
    return [...this.context.tasks.values()].filter((t) => t.dirty);
  }

  /**
   * Commits the open transaction: changelogs, consumed offsets (with the group metadata), then EndTxn.
   * Refuses (abortable) when it holds a partition this instance no longer owns. A commit that fails
   * without saying whether EndTxn went through throws CommitOutcomeUnknownError: the app must not go on
   * with either guess of its state, so new clients restore it from what the brokers hold.
   */
  async commit(): Promise<void> {
    this.#live();
    const producer = this.#current;
    if (!producer.inTransaction) return;
    const { instrument } = this.context;
    const started = performance.now();
    const dirty = this.#dirtyTasks();
    refuseLost(dirty);
    // A checkpoint asking for the changelogs' ends must have its answer before anything more is written.
    await this.options.checkpoints?.settled();
    // Each wait below may outlast the stall limit: a commit given up meanwhile goes no further (retire()).
    this.#live();
    for (const task of dirty) {
      for (const { topic, record } of task.takeChangelog()) {
        this.#live();
        // Each changelog record goes to the input's partition number: the state moves with its partition.
        const sending = producer.send({
          topic,
          partition: task.partition,
          key: Buffer.from(record.key, 'utf8'),
          value: record.value,
          timestamp: record.timestamp,
        });
        // A producer that took the record at once answers nothing to wait for: no microtask per record.
        if (sending !== undefined) await sending;
      }
    }
    this.#live();
    await producer.sendOffsets(
      dirty.map((t) => ({ topic: t.topic, partition: t.partition, offset: t.position.toCommit! })),
      this.#remainingMs(),
    );
    this.#live();
    // A partition lost during the waits above (its loss reaches us between two of them) is not committed:
    // the transaction aborts, as one found holding it at the start does.
    refuseLost(dirty);
    try {
      await producer.commit(this.#remainingMs());
    } catch (error) {
      throw commitFailure(error);
    }
    const seconds = (performance.now() - started) / 1000;
    for (const task of dirty) {
      const records = task.position.records;
      try {
        task.committed(instrument);
      } catch (error) {
        // The state on disk could not take the commit (a full disk): the stage stops; a restart restores
        // from the checkpoint, which is behind this commit.
        throw new StateStoreFailedError(
          `the state store of ${nameOf(task)} could not write a committed transaction (${(error as Error).message ?? String(error)}): stopping`,
          { cause: error },
        );
      }
      instrument('stream.batch', { topic: task.topic }, records);
    }
    this.options.checkpoints?.committed(dirty);
    instrument('stream.transaction', {}, seconds);
    instrument('stream.batch.seconds', {}, (Date.now() - this.#startedAt) / 1000);
    this.#records = 0;
  }

  /**
   * Forgets the open transaction in every task and moves every running partition back to its first
   * record not committed: the consumer handed over records past the failure too, of partitions that
   * had nothing in the transaction yet, and none of them may be skipped.
   */
  async #rewindAll(): Promise<StreamTask<V>[]> {
    this.#records = 0;
    const dirty: StreamTask<V>[] = [];
    for (const task of [...this.context.tasks.values()]) {
      // Not started yet: nothing of it is in the transaction, and its stores and stream time are its
      // restore's (an abort would take the stream time back to before the changelog's records).
      if (task.state === 'assigned' || task.state === 'restoring') continue;
      if (task.dirty) dirty.push(task);
      const from = task.aborted();
      if (from !== undefined && task.state === 'running') await seekTask(this.context, task, from);
    }
    return dirty;
  }

  /** Aborts the open transaction and moves every running partition back to its first record not committed. */
  async abort(reason: string): Promise<void> {
    let dirty: StreamTask<V>[] = [];
    try {
      await this.#producer?.abort(this.options.transactionTimeoutMs);
    } finally {
      dirty = await this.#rewindAll();
      if (dirty.length > 0) {
        this.context.instrument('stream.batch.retry', {});
        this.context.log.warn({ reason, partitions: dirty.map(nameOf) }, 'transaction aborted');
      }
    }
  }

  /** The producer was fenced: forget the transaction, and go on with a new producer (unless it keeps happening). */
  async replaceProducer(error: unknown): Promise<void> {
    const now = Date.now();
    const { memberId, instanceId } = this.options;
    this.#fencings.push(now);
    while (this.#fencings.length > 0 && now - this.#fencings[0]! > FENCING_WINDOW_MS) this.#fencings.shift();
    await this.#rewindAll();
    await this.close();
    if (this.#fencings.length > FENCINGS_ALLOWED) {
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
    await this.#startNewProducer();
  }

  /**
   * The topics' limits changed under the producer (size-limits.ts): a new one, made for them, takes its
   * place. No transaction is open (the failed cycle was aborted), so nothing of it is lost; the new one
   * takes over the same transactional id.
   */
  async #renewProducer(): Promise<void> {
    await this.close();
    this.context.log.warn(
      'the output topics’ max.message.bytes changed since the transactional producer started; starting a new one for them',
    );
    await this.#startNewProducer();
  }

  /** One attempt inside the loop (its consumer must keep polling); a failure hands over to new clients. */
  async #startNewProducer(): Promise<void> {
    let producer: StreamProducer;
    try {
      producer = await this.#openProducer(0);
    } catch (openError) {
      if (classifyError(openError) === 'fatal') this.context.stop(toKafkaError(openError));
      else
        this.context.stop(
          new NewClientsNeededError(
            `a new transactional producer did not start: ${(openError as Error).message}`,
            { cause: openError },
          ),
        );
      return;
    }
    // Closed (or stopped) while it opened: it is never installed, so nothing can leak it.
    if (this.context.halted()) {
      await producer.close();
      return;
    }
    this.#install(producer);
  }

  /**
   * A cycle of the loop failed: stop, hand over to new clients, replace the producer, or abort, move
   * every partition back and back off (unless `backOff` is false: the next cycle dead-letters the
   * record that failed), then renew the producer if the topics' limits changed under it. Returns once
   * the next cycle may start.
   */
  async onFailure(error: unknown, backOff = true): Promise<void> {
    if (error instanceof NewClientsNeededError || error instanceof StateStoreFailedError) {
      this.context.stop(error);
      return;
    }
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
    this.#lastFailure = error instanceof Error ? error.message : String(error);
    this.context.instrument('stream.batch.retry', {});
    this.context.log.warn(
      { ...errorFields(error), attempt: this.#consecutiveFailures },
      'processing failed; aborting, moving every partition back to its last commit, and retrying',
    );
    try {
      await this.abort('error');
    } catch (abortError) {
      if (classifyError(abortError) === 'fatal') this.context.stop(toKafkaError(abortError));
      else await this.replaceProducer(abortError);
    }
    if (this.context.halted()) return;
    if (backOff) {
      const { retryInitialMs = RETRY_INITIAL_MS, retryMaxMs = RETRY_MAX_MS } = this.options;
      await sleep(backoffDelay(this.#consecutiveFailures, retryInitialMs, retryMaxMs));
    }
    // The failure read the limits again (in the background: in time for this check, or for the next failure's).
    if (!this.context.halted() && !this.inTransaction && this.options.producerOutdated?.())
      await this.#renewProducer();
  }

  /**
   * The loop ended: a graceful close commits what was processed, unless a partition was lost meanwhile
   * (or the commit refuses: it holds a lost partition). `failed` (the app stopped, or anything failed
   * while it closed) aborts: the transaction may hold a record's state and offset without its outputs.
   */
  async finish(failed: boolean, lossPending: boolean): Promise<void> {
    try {
      if (this.inTransaction) {
        if (failed || lossPending) await this.abort(failed ? 'stopping' : 'partitions lost while closing');
        else await this.commit().catch(() => this.abort('closing'));
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

/**
 * What a failed commitTransaction means. Fenced: the coordinator aborts it (a new epoch took over).
 * Abortable: librdkafka refused to commit and wants an abort (EndTxn was not sent). Fatal: the producer
 * is gone. Anything else (a timeout, a retriable error past its retries, a lost connection) leaves the
 * outcome unknown: EndTxn may have reached the coordinator.
 */
function commitFailure(error: unknown): unknown {
  const kind = classifyError(error);
  if (kind === 'fenced' || kind === 'fatal') return error;
  if ((error as { abortable?: unknown }).abortable === true) return error;
  return new CommitOutcomeUnknownError(
    `the transaction's commit failed without an outcome (${(error as Error).message ?? String(error)})`,
    { cause: error },
  );
}

/** Refuses (abortable) a commit whose transaction holds records of a partition this instance no longer owns. */
function refuseLost<V>(dirty: readonly StreamTask<V>[]): void {
  const gone = dirty.filter((t) => t.state !== 'running' && t.state !== 'revoked');
  if (gone.length > 0)
    throw new PartitionsLostError(
      `the open transaction holds records of ${gone.map(nameOf).join(', ')}, no longer this instance's`,
    );
}
