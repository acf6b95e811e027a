// Runs a topology exactly-once the way Kafka Streams' EOS v2 does (KIP-447): per instance one consumer
// (static member, cooperative-sticky, read_committed) and one transactional producer. One poll loop is
// the only code that talks to the consumer: rebalance callbacks only queue what happened and move task
// states (rebalances.ts); the loop handles them, advances restores (restore-orchestrator.ts), processes
// what it fetched (record-processing.ts) and commits or aborts (transaction-cycle.ts).
import type { Config } from '../config.js';
import type { KafkaSettings } from '../kafka/rdkafka.js';
import { ERRORS, KafkaError, toKafkaError } from '../kafka/rdkafka.js';
import type { Logger } from '../log.js';
import { errorFields } from '../log-error.js';
import { CheckpointWriter } from './checkpoint-writer.js';
import {
  classifyError,
  DEAD_LETTER_AFTER_MS,
  LoopStalledError,
  RECORD_ATTEMPTS,
  sessionTimeoutRefused,
} from './errors.js';
import { Rebalances } from './rebalances.js';
import { RecordProcessing } from './record-processing.js';
import { restoreTasks } from './restore.js';
import { RestoreOrchestrator, type RestoreTasks } from './restore-orchestrator.js';
import { keyOf, nameOf, type RunnerContext, seekTask } from './runner-context.js';
import { producerOutdated, SizeLimits } from './size-limits.js';
import { librdkafkaStandbyConsumer } from './standby-consumer.js';
import { type CreateStandbyConsumer, StandbyFollower, type StandbyLag } from './standby-follower.js';
import { StateDirs } from './state-dirs.js';
import { type ConsumedMessage, type CreateStreamClients, librdkafkaClients } from './stream-clients.js';
import type { Instrument, StreamTask } from './stream-task.js';
import type { TaskState } from './task-state.js';
import { type Topology, validateTopology } from './topology.js';
import { TransactionCycle } from './transaction-cycle.js';

export type { Instrument } from './stream-task.js';

/** Catching up, a transaction commits after this many input records or this long (commit-policy.ts). */
export const CATCH_UP_COMMIT_MAX_RECORDS = 50_000;
export const CATCH_UP_COMMIT_INTERVAL_MS = 1_000;

export interface StreamAppOptions<V> {
  kafka: KafkaSettings;
  topology: Topology<V>;
  /** The consumer group, and the first part of the transactional id and group.instance.id. */
  appId: string;
  /** This process instance (`HOOKLEDGER_INSTANCE_ID`): ids are `<appId>-<instanceId>`. Unique per live instance. */
  instanceId: string;
  logger: Logger;
  instrument?: Instrument;
  /** ~10 s: a dead owner's open transaction blocks read_committed readers this long at most. */
  transactionTimeoutMs?: number;
  /** With static membership, how long a silent instance keeps its partitions. */
  sessionTimeoutMs?: number;
  /** Lost partitions with no assignment since for longer than this: the app stops as fenced (checkRejoin). */
  rejoinTimeoutMs?: number;
  /**
   * A transaction commits after this long (from its first record) or `commitMaxRecords` records,
   * whichever comes first. Each commit costs a few broker round trips (AddOffsets, TxnOffsetCommit,
   * EndTxn and its markers, ~5-20 ms). 25 ms (PROCESSOR_COMMIT_INTERVAL_MS), a quarter of Kafka Streams'
   * EOS default: bench:freshness at 500 deliveries/s, the intervals alternating in one sitting, measured
   * POST → visible p50 71 ms, p99 139 ms at 25 ms against 84 and 145 ms at 50 ms (and 100 / 180 ms at
   * 100 ms on an earlier day). A backlog is not slowed by the commits this makes
   * at live rates: catching up, `catchUpCommitIntervalMs` applies.
   */
  commitIntervalMs?: number;
  /**
   * While catching up (the last poll handed over a full batch), a transaction commits after this long
   * instead (commit-policy.ts): a backlog goes through in fewer, larger transactions, and the interval is
   * back to `commitIntervalMs` with the first batch that is not full. Default: 1 s, at most a quarter
   * of the transaction timeout.
   */
  catchUpCommitIntervalMs?: number;
  /**
   * A cap that only a backlog reaches (catching up, a replay): bench:process measured the exactly-once
   * pass-through at 18k records/s with 1,000 records a transaction (63 % of the time committing) and
   * 56k/s with 10,000.
   */
  commitMaxRecords?: number;
  /** While catching up, the record cap instead (commit-policy.ts). */
  catchUpCommitMaxRecords?: number;
  /** Records taken from the consumer at most per poll. */
  maxBatchRecords?: number;
  /** librdkafka's max.partition.fetch.bytes. */
  maxBytesPerPartition?: number;
  /**
   * A cycle of the poll loop (or its failure handling) running longer than this means something never
   * answered: the app stops with LoopStalledError and the rejoining wrapper starts it again with new
   * clients. Every call the loop makes is bounded below this (registry requests, commits, aborts).
   * Default: the transaction timeout plus 10 s.
   */
  stallTimeoutMs?: number;
  /**
   * A record failing deterministically is dead-lettered after RECORD_ATTEMPTS attempts, and no sooner
   * than this after its first failure (default DEAD_LETTER_AFTER_MS, 10 s; unit tests shorten it).
   */
  deadLetterAfterMs?: number;
  /** A failed batch is tried again after this back-off, doubling up to `retryMaxMs` (200 ms and 5 s). */
  retryInitialMs?: number;
  retryMaxMs?: number;
  /** A failed restore is tried again after this back-off, doubling up to `restoreRetryMaxMs`. */
  restoreRetryInitialMs?: number;
  restoreRetryMaxMs?: number;
  /** The Kafka clients (default librdkafka; unit tests pass a fake). */
  clients?: CreateStreamClients;
  /**
   * The root of the state directories (PROCESSOR_STATE_DIR) when stores keep their state on disk
   * (PROCESSOR_STATE_STORE=lmdb): one directory per task, `<root>/<appId>/<instanceId>/<topic>-<partition>`.
   */
  stateDir?: string;
  /**
   * PROCESSOR_STANDBY_REPLICAS: 1 follows the changelogs of every input partition this instance does not
   * own into its state directories (standby-follower.ts); needs `stateDir`. Default 0.
   */
  standbyReplicas?: number;
  /** The standby follower's consumer (default librdkafka's, group-less; unit tests pass a fake). */
  standbyConsumer?: CreateStandbyConsumer;
  /** How a restore reads the changelogs (default restore.ts over the same Kafka; unit tests pass a fake). */
  restore?: RestoreTasks<V>;
}

export interface TaskStatus {
  topic: string;
  partition: number;
  /** assigned, restoring, running, … (task-state.ts); restoring includes a restore waiting to be retried. */
  status: TaskState;
  streamTime: number;
  stores: Record<string, number>;
  /** Failed restore attempts in a row (retried with back-off). */
  restoreFailures: number;
  /** Why the last restore attempt failed, while it is retried. */
  restoreError?: string;
  /** While restoring: changelog records restored, and how many there are to restore (once known). */
  restoreProgress?: { records: number; total?: number };
}

export interface StreamApp {
  /** Joined its group, and every assigned partition's state is restored. */
  isReady(): boolean;
  /** Ready, or what keeps it from being ready (one line each: a partition and its last restore error, …). */
  readiness(): { ready: boolean; reasons: string[] };
  tasks(): TaskStatus[];
  /** Bytes the state directories take on disk (undefined: state in memory). */
  stateDiskBytes?(): number | undefined;
  /** Records behind per changelog partition followed as a standby (undefined: no standby). */
  standbyLag?(): StandbyLag[] | undefined;
  /** Settles when the app stopped: closed, or a fatal error (then `failure()` says which). */
  readonly stopped: Promise<void>;
  /** Why the app stopped by itself, if it did. */
  failure(): Error | undefined;
  close(): Promise<void>;
}

/**
 * The stall limit for a stage's settings: past the transaction timeout (a commit gets what is left of
 * it), with room for two registry requests that time out (a cache miss on decode, then on encode).
 */
export function stallTimeoutMs(
  config: Pick<Config, 'PROCESSOR_TRANSACTION_TIMEOUT_MS' | 'SCHEMA_REGISTRY_TIMEOUT'>,
): number {
  return config.PROCESSOR_TRANSACTION_TIMEOUT_MS + Math.max(10_000, 2 * config.SCHEMA_REGISTRY_TIMEOUT);
}

/** The root of the state directories when the stores keep their state on disk, else undefined (in memory). */
export function stateDirOf(
  config: Pick<Config, 'PROCESSOR_STATE_STORE' | 'PROCESSOR_STATE_DIR'>,
): string | undefined {
  return config.PROCESSOR_STATE_STORE === 'lmdb' ? config.PROCESSOR_STATE_DIR : undefined;
}

/** A cycle busy this long is named in readiness (a normal one takes milliseconds, a commit a few hundred). */
const BUSY_REPORTED_AFTER_MS = 5_000;
/** Failed cycles in a row from which readiness reports the failure being retried. */
const FAILURES_REPORTED_AFTER = 3;
/**
 * The longest a poll waits for a first record (less while a transaction is open: until it is due). The
 * loop also handles rebalances, restores and the stall watchdog's view between polls.
 */
const POLL_WAIT_MS = 50;

/** Why a task is not running yet, as readiness reports it. */
function notRunning<V>(task: StreamTask<V>): string {
  const { failures, lastError, records, total } = task.restore;
  if (failures === 0 && task.state === 'restoring' && total !== undefined)
    return `${nameOf(task)} restoring: ${records} of ${total} changelog records`;
  if (failures === 0) return `${nameOf(task)} ${task.state}`;
  return `${nameOf(task)} ${task.state}: restore failed ${failures} time${failures === 1 ? '' : 's'}, retrying (last error: ${lastError})`;
}

export async function startStreamApp<V>(options: StreamAppOptions<V>): Promise<StreamApp> {
  const {
    kafka: settings,
    appId,
    instanceId,
    logger,
    instrument = () => undefined,
    transactionTimeoutMs = 10_000,
    sessionTimeoutMs = 30_000,
    // Heartbeats stop and a rejoin waits for the coordinator, then for the others to rejoin: several
    // session timeouts are normal, minutes are not.
    rejoinTimeoutMs = Math.max(30_000, sessionTimeoutMs * 5),
    commitIntervalMs = 25,
    // Catching up: larger transactions (commit-policy.ts), well inside the transaction's timeout.
    catchUpCommitIntervalMs = Math.min(CATCH_UP_COMMIT_INTERVAL_MS, transactionTimeoutMs / 4),
    commitMaxRecords = 10_000,
    catchUpCommitMaxRecords = CATCH_UP_COMMIT_MAX_RECORDS,
    maxBatchRecords = 500,
    maxBytesPerPartition = 1_048_576,
    stallTimeoutMs = transactionTimeoutMs + 10_000,
    deadLetterAfterMs = DEAD_LETTER_AFTER_MS,
    retryInitialMs,
    retryMaxMs,
    restoreRetryInitialMs = 500,
    restoreRetryMaxMs = 30_000,
    clients: createClients = librdkafkaClients,
    restore = (due) => restoreTasks(settings, due),
    standbyReplicas = 0,
    standbyConsumer = () => librdkafkaStandbyConsumer(settings),
  } = options;
  const topology = validateTopology(options.topology);
  const memberId = `${appId}-${instanceId}`;
  const log = logger.child({ component: 'stream-runner', app: appId, instance: instanceId });
  const sources = topology.sources.map((s) => s.topic);
  const changelogTopics = new Set(
    topology.sources.flatMap((s) => topology.stores.map((st) => st.changelogTopic(s.topic))),
  );

  let closing = false;
  let failure: Error | undefined;
  /**
   * What went wrong while the app closed: a cycle's error, a step given up, a stop. The open transaction
   * may then be half done (a record's state and offset written, its outputs not sent; a commit's
   * changelog records partly sent), so the close aborts it instead of committing. Not the app's failure:
   * a close asked for still ends as a close.
   */
  let failedWhileClosing: Error | undefined;
  let rebalances: Rebalances<V> | undefined;
  const stateDirs =
    options.stateDir === undefined ? undefined : new StateDirs(options.stateDir, appId, instanceId);
  const clients = createClients({
    settings,
    groupId: appId,
    memberId,
    transactionTimeoutMs,
    sessionTimeoutMs,
    maxBytesPerPartition,
    onRebalance: (kind, partitions, error) => rebalances?.onRebalance(kind, partitions, error),
  });
  const { consumer } = clients;
  const context: RunnerContext<V> = {
    log,
    consumer,
    tasks: new Map<string, StreamTask<V>>(),
    instrument,
    halted: () => closing || failure !== undefined,
    closing: () => closing,
    stop(error) {
      if (failure !== undefined) return;
      if (closing) {
        if (failedWhileClosing !== undefined) return;
        failedWhileClosing = error;
        log.warn(errorFields(error), `closing: ${error.message}; the open transaction is aborted`);
        return;
      }
      failure = error;
      log.error(errorFields(error), `stream app stopping: ${error.message}`);
    },
  };
  const { tasks } = context;
  consumer.onError((error) => {
    const refused = sessionTimeoutRefused(error, sessionTimeoutMs);
    if (refused !== undefined) {
      context.stop(refused);
      return;
    }
    const kind = classifyError(toKafkaError(error));
    if (kind === 'fatal') context.stop(toKafkaError(error, 'consumer'));
    else log.debug({ err: error }, 'consumer error (librdkafka retries by itself)');
  });

  const limitTopics = [...new Set([...topology.sinks.map((s) => s.topic), ...changelogTopics])];
  const limits = new SizeLimits(
    await clients.maxMessageBytes(limitTopics),
    () => clients.maxMessageBytes(limitTopics),
    log,
  );
  // Each producer (the first, one replacing a fenced one, or one renewed after the limits changed) is
  // sized for the limits known when it is made: the largest record, batches under the smallest limit.
  let producerMadeFor = limits.producerSizing();
  const cycle = new TransactionCycle<V>(context, {
    newProducer: () => {
      producerMadeFor = limits.producerSizing();
      return clients.newProducer(limits.largest() ?? 0, limits.smallest());
    },
    producerOutdated: () => producerOutdated(producerMadeFor, limits.producerSizing()),
    memberId,
    instanceId,
    transactionTimeoutMs,
    commitIntervalMs,
    catchUpCommitIntervalMs,
    commitMaxRecords,
    catchUpCommitMaxRecords,
    retryInitialMs,
    retryMaxMs,
    ...(stateDirs === undefined ? {} : { checkpoints: new CheckpointWriter<V>(consumer, log) }),
  });
  const restorer = new RestoreOrchestrator<V>(context, restore, {
    retryInitialMs: restoreRetryInitialMs,
    retryMaxMs: restoreRetryMaxMs,
  });
  const processing = new RecordProcessing<V>(topology, limits.byTopic, cycle, deadLetterAfterMs);
  const readsAhead = topology.sources.some((s) => s.readAhead !== undefined);
  // Started here, it waits for the first assignment before it follows anything.
  const standby =
    stateDirs === undefined || standbyReplicas < 1
      ? undefined
      : new StandbyFollower<V>({ topology, stateDirs, createConsumer: standbyConsumer, logger: log });
  const joinedRebalances = new Rebalances<V>(context, { topology, restorer, cycle, stateDirs, standby });

  /**
   * Offsets follow the consumer's position past what was processed (transaction markers, aborted
   * records), and each running partition's lag is its end minus that position: an idle partition's
   * goes to zero rather than keeping the value of its last batch.
   */
  async function followPositions(): Promise<void> {
    const running = [...tasks.values()].filter((t) => t.machine.running);
    if (running.length === 0) return;
    for (const { topic, partition, offset } of consumer.position(
      running.map((t) => ({ topic: t.topic, partition: t.partition })),
    )) {
      if (typeof offset !== 'number' || offset < 0) continue;
      const high = consumer.highWatermark(topic, partition);
      if (high !== undefined)
        instrument('stream.lag', { topic, partition: String(partition) }, Math.max(0, high - offset));
      const task = tasks.get(keyOf(topic, partition));
      // Only past what this instance processed or committed: never ahead of a record.
      if (task === undefined || !task.position.canAdvanceTo(offset)) continue;
      await cycle.begin();
      task.position.advanceTo(offset);
    }
  }

  /** What the loop is waiting for now (readiness and the stall watchdog name it). */
  let activity = 'starting';
  /** While processing: the record's task and offset, described only when asked (nothing built per record). */
  let processingTask: StreamTask<V> | undefined;
  let processingOffset = 0;
  const describeActivity = () =>
    processingTask === undefined
      ? activity
      : `processing ${nameOf(processingTask)} offset ${processingOffset}`;
  /** When the current cycle (or its failure handling) started; undefined between cycles. */
  let busySince: number | undefined;

  async function runOnce(): Promise<void> {
    activity = 'handling rebalances';
    await joinedRebalances.handle();
    if (context.halted()) return;
    checkRejoin();
    activity = 'starting restored partitions';
    await restorer.advance();
    activity = 'polling';
    const messages: ConsumedMessage[] = await consumer.consume(
      maxBatchRecords,
      cycle.pollWaitMs(POLL_WAIT_MS),
    );
    cycle.polled(messages.length, maxBatchRecords);
    activity = 'processing';
    let complete = true;
    /** Partitions with records handed over but not processed: the consumer's position is past them. */
    const unprocessed = new Set<StreamTask<V>>();
    for (const message of messages)
      tasks.get(keyOf(message.topic, message.partition))?.position.handedOver(message.offset);
    if (readsAhead && !joinedRebalances.pending) {
      const batch: { task: StreamTask<V>; message: ConsumedMessage }[] = [];
      for (const message of messages) {
        const task = tasks.get(keyOf(message.topic, message.partition));
        if (task?.machine.running) batch.push({ task, message });
      }
      processing.readAhead(batch);
    }
    for (const message of messages) {
      const task = tasks.get(keyOf(message.topic, message.partition));
      // A rebalance stops the batch (a lost partition must abort before anything else), and so does a
      // transaction half through its time: the rest of the batch is read again after the commit.
      if (joinedRebalances.pending || context.halted() || cycle.overdue()) complete = false;
      if (task === undefined || !task.machine.owned) continue;
      if (!complete || !task.machine.running) {
        unprocessed.add(task);
        continue;
      }
      processingTask = task;
      processingOffset = message.offset;
      await processing.process(task, message);
      processingTask = undefined;
    }
    for (const task of unprocessed) {
      // Running: read again from the first record not processed. Not running yet (fetched just before
      // its pause): it seeks to its start when it runs (restore-orchestrator.ts).
      const next = task.position.readNext();
      if (task.machine.running && next !== undefined) await seekTask(context, task, next);
    }
    // Every fetched record was processed: offsets follow the consumer's position, which moves past
    // transaction markers (a read_committed reader never receives them), so a caught-up lag is zero.
    if (complete) await followPositions();
    cycle.processed();
    if (cycle.due() || cycle.overdue() || (cycle.inTransaction && joinedRebalances.pending)) {
      if (joinedRebalances.lossPending) return; // handle() aborts it
      activity = 'committing';
      await cycle.commit();
    }
    // Only a cycle that leaves nothing uncommitted has gone through: most failures show at the commit,
    // one cycle after the records were processed again, and a cycle that processed them without
    // committing yet must not clear the count (the back-off stayed at its first step, readiness green).
    if (!cycle.inTransaction) cycle.succeeded();
  }

  /**
   * After a loss the consumer rejoins by itself, and a rejoin ends in an assignment within a few session
   * timeouts. One that never comes (seen after a single broker's restart under load: no error, no
   * assignment, nothing moving) would stall the app silently: stop it as a fenced consumer, so the
   * rejoining wrapper starts it again with new clients, as Kafka Streams replaces a stuck client.
   */
  function checkRejoin(): void {
    const waitingMs = joinedRebalances.rejoinWaitingMs(Date.now());
    if (waitingMs <= rejoinTimeoutMs) return;
    context.stop(
      new KafkaError(
        Object.assign(
          new Error(
            `partitions lost ${Math.round(waitingMs / 1000)} s ago and no assignment since: rejoining with new clients`,
          ),
          { code: ERRORS.ERR__FATAL },
        ),
        'rejoin',
      ),
    );
  }

  /**
   * Every await of the loop is bounded, but a bound can be missed (a client call that never calls back):
   * a cycle busy past stallTimeoutMs stops the app, and the rejoining wrapper starts it with new clients.
   */
  let stalled: ((error: Error) => void) | undefined;
  const watchdog = setInterval(
    () => {
      // While closing too: a close would otherwise wait for ever on a call that never answers.
      if (busySince === undefined || failure !== undefined) return;
      const busyMs = Date.now() - busySince;
      if (busyMs <= stallTimeoutMs) return;
      const error = new LoopStalledError(
        `the poll loop has been ${describeActivity()} for ${Math.round(busyMs / 1000)} s, past its limit of ${Math.round(stallTimeoutMs / 1000)} s`,
      );
      cycle.retire(error);
      // Closing, the stop only makes the close abort: what the step left half done is never committed.
      context.stop(error);
      stalled?.(error);
    },
    Math.min(1_000, stallTimeoutMs),
  ).unref();

  /** Runs one step of the loop, given up (left to settle alone) if the watchdog stops the app meanwhile. */
  async function bounded(step: () => Promise<void>): Promise<void> {
    busySince = Date.now();
    const run = step();
    try {
      await Promise.race([
        run,
        new Promise<never>((_, reject) => {
          stalled = reject;
        }),
      ]);
    } finally {
      stalled = undefined;
      busySince = undefined;
      // A step given up may still settle later; nothing waits for it, so its failure goes nowhere.
      run.catch(() => undefined);
    }
  }

  async function loop(): Promise<void> {
    while (!context.halted()) {
      try {
        await bounded(runOnce);
      } catch (error) {
        if (context.halted()) {
          // Closing: the cycle's error makes the close abort (the error of a stopped app already does).
          context.stop(error instanceof Error ? error : toKafkaError(error));
          break;
        }
        // The poll reports it: a retry would only send the same JoinGroup again.
        const refused = sessionTimeoutRefused(error, sessionTimeoutMs);
        if (refused !== undefined) {
          context.stop(refused);
          break;
        }
        // A topic's limit may have been lowered since it was read: the broker's refusal reaches this loop
        // only as an aborted transaction, so any failure reads the limits again (size-limits.ts).
        limits.refreshSoon();
        const { attempts, givingUp } = processing.blame(error);
        if (attempts > 0)
          log.warn(
            { ...errorFields(error), attempts, maxAttempts: RECORD_ATTEMPTS },
            `a record failed (${describeActivity()}); it is dead-lettered after ${RECORD_ATTEMPTS} attempts over ${deadLetterAfterMs / 1000} s`,
          );
        processingTask = undefined;
        activity = 'handling a failure';
        // A record out of attempts is dead-lettered by the next cycle: no reason to wait for it.
        await bounded(() => cycle.onFailure(error, !givingUp)).catch((e: unknown) =>
          context.stop(e instanceof Error && context.halted() ? e : toKafkaError(e)),
        );
      }
    }
    clearInterval(watchdog);
    activity = 'closing';
    await cycle.finish(
      failure !== undefined || failedWhileClosing !== undefined,
      joinedRebalances.lossPending,
    );
    for (const task of tasks.values()) restorer.closeTask(task);
    tasks.clear();
    // From now on an assignment (of the consumer's close, or after it) makes no task.
    joinedRebalances.finish();
    await consumer.disconnect(10_000);
    await limits.settled();
    await cycle.close();
    await standby?.close();
    await stateDirs?.closeAll();
  }

  try {
    await cycle.open();
    rebalances = joinedRebalances;
    await consumer.connect();
    consumer.subscribe(sources);
  } catch (error) {
    // Nothing may outlive a start that failed (a start is tried again while the brokers are away,
    // rejoining-app.ts): the producer may be open (it fenced its predecessor), the standby follower runs.
    joinedRebalances.finish();
    await consumer.disconnect(10_000);
    await limits.settled();
    await cycle.close();
    await standby?.close();
    await stateDirs?.closeAll();
    throw error;
  }
  log.info({ sources, transactionalId: memberId }, 'stream app started');
  const stopped = loop().then(
    () => undefined,
    (error: unknown) => {
      failure ??= toKafkaError(error);
    },
  );

  const readiness = () => {
    const reasons: string[] = [];
    if (failure !== undefined) reasons.push(`stopped: ${failure.message}`);
    if (closing) reasons.push('closing');
    if (!joinedRebalances.joined) reasons.push('not joined its consumer group yet');
    // After a loss the tasks are gone, and nothing else would say so until new clients (minutes later).
    const lostMs = joinedRebalances.rejoinWaitingMs(Date.now());
    if (lostMs > 0)
      reasons.push(`partitions lost ${Math.round(lostMs / 1000)} s ago, rejoining its consumer group`);
    if (
      busySince !== undefined &&
      Date.now() - busySince > Math.min(BUSY_REPORTED_AFTER_MS, stallTimeoutMs / 2)
    )
      reasons.push(`poll loop ${describeActivity()} for ${Math.round((Date.now() - busySince) / 1000)} s`);
    const failing = cycle.failing;
    if (failing !== undefined && failing.times >= FAILURES_REPORTED_AFTER)
      reasons.push(`processing failed ${failing.times} times in a row, retrying: ${failing.error}`);
    for (const task of tasks.values()) if (!task.machine.running) reasons.push(notRunning(task));
    return { ready: reasons.length === 0, reasons };
  };

  return {
    isReady: () => readiness().ready,
    readiness,
    tasks: () =>
      [...tasks.values()].map((t) => ({
        topic: t.topic,
        partition: t.partition,
        status: t.state,
        streamTime: t.streamTime,
        // Read only by the store-size gauge: a store on disk counts its waiting ids with a read each, so
        // the readiness and the other gauges, which call tasks() too, do not pay for it.
        get stores() {
          return Object.fromEntries(t.storeSizes());
        },
        restoreFailures: t.restore.failures,
        ...(t.restore.lastError === undefined ? {} : { restoreError: t.restore.lastError }),
        ...(t.state === 'restoring'
          ? {
              restoreProgress: {
                records: t.restore.records,
                ...(t.restore.total === undefined ? {} : { total: t.restore.total }),
              },
            }
          : {}),
      })),
    stateDiskBytes: () => stateDirs?.sizeOnDisk(),
    standbyLag: () => standby?.lag(),
    stopped,
    failure: () => failure,
    async close() {
      closing = true;
      await stopped;
      log.info('stream app stopped');
    },
  };
}
