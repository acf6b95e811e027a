// Runs a topology exactly-once the way Kafka Streams' EOS v2 does (KIP-447): per instance one consumer
// (static member, cooperative-sticky, read_committed) and one transactional producer. One poll loop is
// the only code that talks to the consumer: rebalance callbacks only queue what happened and move task
// states; the loop commits or aborts, (un)assigns, restores, processes and commits.
import type { Message } from '@confluentinc/kafka-javascript';
import { withAdmin } from '../kafka/admin.js';
import {
  call,
  connect,
  createConsumer,
  disconnect,
  ERRORS,
  type KafkaSettings,
  type RdConsumer,
  toKafkaError,
} from '../kafka/rdkafka.js';
import type { Logger } from '../log.js';
import { EosProducer, type OutRecord } from './eos-producer.js';
import { classifyError, StreamAppStoppedError } from './errors.js';
import type { InputRecord } from './processor.js';
import { type RestoreRun, restoreTasks } from './restore.js';
import { backoffDelay, retry } from './retry.js';
import { type Instrument, type Outgoing, type RecordFailure, StreamTask } from './stream-task.js';
import type { TaskState } from './task-state.js';
import { type Topology, validateTopology } from './topology.js';

export type { Instrument } from './stream-task.js';

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
  /**
   * A transaction commits after this long (from its first record) or `commitMaxRecords` records,
   * whichever comes first. Each commit costs a few broker round trips (AddOffsets, TxnOffsetCommit,
   * EndTxn and its markers, ~5-20 ms); 100 ms (Kafka Streams' EOS default) keeps end-to-end latency
   * well under the 500 ms p99 target at 500 deliveries/s (~50 records a transaction).
   */
  commitIntervalMs?: number;
  commitMaxRecords?: number;
  /** Records taken from the consumer at most per poll. */
  maxBatchRecords?: number;
  /** librdkafka's max.partition.fetch.bytes. */
  maxBytesPerPartition?: number;
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
}

export interface StreamApp {
  /** Joined its group, and every assigned partition's state is restored. */
  isReady(): boolean;
  tasks(): TaskStatus[];
  /** Settles when the app stopped: closed, or a fatal error (then `failure()` says which). */
  readonly stopped: Promise<void>;
  /** Why the app stopped by itself, if it did. */
  failure(): Error | undefined;
  close(): Promise<void>;
}

type RebalanceEvent =
  | { kind: 'assign'; partitions: { topic: string; partition: number }[] }
  | { kind: 'revoke'; partitions: { topic: string; partition: number }[]; lost: boolean };

const keyOf = (topic: string, partition: number) => `${topic}\u0000${partition}`;
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
/** Kafka's per-record and per-batch overhead, with room: what a record adds to max.message.bytes. */
const RECORD_OVERHEAD_BYTES = 128;
/** A transient error in the loop is retried after this back-off, doubling up to the max. */
const RETRY_INITIAL_MS = 200;
const RETRY_MAX_MS = 5_000;
const RESTORE_RETRY_INITIAL_MS = 500;
const RESTORE_RETRY_MAX_MS = 30_000;
/** More fencings than this within the window: another live instance has our transactional id. */
const FENCINGS_ALLOWED = 3;
const FENCING_WINDOW_MS = 60_000;

class OutputTooLargeError extends Error {
  override name = 'OutputTooLargeError';
}

/** Whether a serializer's error says the registry could not be asked (retry) rather than a bad value. */
function isTransientSerializeError(error: unknown): boolean {
  const e = error as { code?: unknown; status?: unknown; message?: unknown };
  if (typeof e?.code === 'string') return true;
  if (typeof e?.status === 'number') return e.status >= 500 || e.status === 429;
  return typeof e?.message === 'string' && /fetch failed|network|timeout|socket|ECONN/i.test(e.message);
}

/** The largest record each topic accepts (its max.message.bytes, broker default included). */
async function maxMessageBytes(
  settings: KafkaSettings,
  topics: readonly string[],
): Promise<Map<string, number>> {
  const configs = await retry(() => withAdmin(settings, (admin) => admin.topicConfigs(topics)), {
    retries: 5,
    initialDelayMs: 500,
  });
  const limits = new Map<string, number>();
  for (const topic of topics) {
    const value = Number(configs.get(topic)?.['max.message.bytes']);
    limits.set(topic, Number.isFinite(value) && value > 0 ? value : 1_048_588);
  }
  return limits;
}

function recordBytes(record: OutRecord): number {
  let size = RECORD_OVERHEAD_BYTES + (record.key?.length ?? 0) + (record.value?.length ?? 0);
  for (const [name, value] of Object.entries(record.headers ?? {}))
    size += name.length + Buffer.byteLength(value);
  return size;
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
    commitIntervalMs = 100,
    commitMaxRecords = 1_000,
    maxBatchRecords = 500,
    maxBytesPerPartition = 1_048_576,
  } = options;
  const topology = validateTopology(options.topology);
  const memberId = `${appId}-${instanceId}`;
  const log = logger.child({ component: 'stream-runner', app: appId, instance: instanceId });
  const sources = new Map(topology.sources.map((s) => [s.topic, s]));
  const sinks = new Map(topology.sinks.map((s) => [s.name, s]));
  const changelogTopics = new Set(
    topology.sources.flatMap((s) => topology.stores.map((st) => st.changelogTopic(s.topic))),
  );
  const limits = await maxMessageBytes(settings, [
    ...new Set([...topology.sinks.map((s) => s.topic), ...changelogTopics]),
  ]);
  const opTimeoutMs = Math.max(30_000, transactionTimeoutMs * 2);

  const newProducer = () =>
    new EosProducer({
      settings,
      transactionalId: memberId,
      transactionTimeoutMs,
      maxMessageBytes: Math.max(...limits.values()),
      logger: log,
    });
  let producer = newProducer();
  await retry(() => producer.open(), {
    retries: 5,
    initialDelayMs: 500,
    isRetriable: (error) => classifyError(error) !== 'fatal' && classifyError(error) !== 'fenced',
    onRetry: (error, attempt) =>
      log.warn({ err: error, attempt }, 'transactional producer did not start; retrying'),
  });

  const tasks = new Map<string, StreamTask<V>>();
  const events: RebalanceEvent[] = [];
  let joined = false;
  let closing = false;
  /** Set once the loop ended: rebalance callbacks (of the consumer's close) are then acknowledged at once. */
  let finished = false;
  let failure: Error | undefined;
  const fencings: number[] = [];
  let consecutiveFailures = 0;
  let txStartedAt = 0;
  let txRecords = 0;

  const port = {
    pause: (topic: string, partition: number) => {
      try {
        consumer.pause([{ topic, partition }]);
      } catch (error) {
        log.debug({ err: error, topic, partition }, 'pause failed (partition already gone)');
      }
    },
    resume: (topic: string, partition: number) => {
      try {
        consumer.resume([{ topic, partition }]);
      } catch (error) {
        log.debug({ err: error, topic, partition }, 'resume failed (partition already gone)');
      }
    },
  };

  const consumer = createConsumer(
    settings,
    {
      'group.id': appId,
      // Static membership: a restarted instance (same id) gets its partitions back without a rebalance.
      'group.instance.id': memberId,
      'partition.assignment.strategy': 'cooperative-sticky',
      'isolation.level': 'read_committed',
      'enable.auto.commit': false,
      'enable.auto.offset.store': false,
      'session.timeout.ms': sessionTimeoutMs,
      'heartbeat.interval.ms': Math.max(500, Math.floor(sessionTimeoutMs / 10)),
      // Restores run beside the loop on their own group-less consumers while the loop keeps polling
      // (the restoring partitions paused), so a long restore never exceeds this: the default stays.
      'max.poll.interval.ms': 300_000,
      'max.partition.fetch.bytes': maxBytesPerPartition,
      'fetch.wait.max.ms': 50,
      'allow.auto.create.topics': false,
      rebalance_cb: (error: { code: number }, assignment: { topic: string; partition: number }[]) =>
        onRebalance(error, assignment),
    } as never,
    'stream-consumer',
    // A partition nothing was committed for starts at its beginning: every raw record is processed.
    { 'auto.offset.reset': 'earliest' },
  ) as RdConsumer;
  consumer.setDefaultConsumeTimeout(50);
  consumer.setDefaultIsTimeoutOnlyForFirstMessage(true);

  /** The rebalance callback: records what happened and moves task states; the loop acts on it. */
  function onRebalance(
    error: { code: number } | undefined,
    assignment: { topic: string; partition: number }[],
  ) {
    const partitions = assignment.map(({ topic, partition }) => ({ topic, partition }));
    const code = error?.code;
    if (finished) {
      // The consumer closes (or the app stopped): nothing is processed any more, acknowledge at once.
      try {
        if (code === ERRORS.ERR__ASSIGN_PARTITIONS) consumer.incrementalAssign(partitions);
        else consumer.incrementalUnassign(partitions);
      } catch (err) {
        log.debug({ err }, 'rebalance acknowledgement after stop failed');
      }
      return;
    }
    if (code === ERRORS.ERR__ASSIGN_PARTITIONS) {
      events.push({ kind: 'assign', partitions });
    } else if (code === ERRORS.ERR__REVOKE_PARTITIONS) {
      const lost = consumer.assignmentLost();
      for (const { topic, partition } of partitions) {
        const task = tasks.get(keyOf(topic, partition));
        if (task?.machine.owned) task.machine.transitionTo(lost ? 'lost' : 'revoked');
      }
      events.push({ kind: 'revoke', partitions, lost });
    } else {
      log.error({ err: error }, 'rebalance error');
    }
  }

  consumer.on('event.error', (error) => {
    const kind = classifyError(toKafkaError(error));
    if (kind === 'fatal') stop(toKafkaError(error, 'consumer'));
    else log.debug({ err: error }, 'consumer error (librdkafka retries by itself)');
  });
  const watchProducer = (p: EosProducer) =>
    p.onError((error) => {
      const e = toKafkaError(error, 'producer');
      if (classifyError(e) === 'fatal' && !e.fatal) stop(e);
      else log.debug({ err: error }, 'producer error');
    });
  watchProducer(producer);

  function stop(error: Error): void {
    if (failure !== undefined || closing) return;
    failure = error;
    log.error({ err: error }, `stream app stopping: ${error.message}`);
  }

  // ---- restore -------------------------------------------------------------------------------
  const restoreRuns = new Map<StreamTask<V>, RestoreRun>();

  function advanceRestores(): void {
    const now = Date.now();
    const due: StreamTask<V>[] = [];
    for (const task of tasks.values()) {
      if (task.state === 'assigned') {
        task.machine.transitionTo('restoring');
        due.push(task);
      } else if (task.state === 'restoring') {
        if (task.restore.done) {
          task.machine.transitionTo('running');
          // From the group's committed offset, whatever was fetched (and dropped) while it was paused:
          // the seek is queued right behind the resume, so nothing fetched from elsewhere is handed over.
          if (task.fetchFrom !== undefined) void seek(task, task.fetchFrom);
          task.fetchFrom = undefined;
          task.log.info(
            { streamTime: task.streamTime, stores: Object.fromEntries(task.storeSizes()) },
            'partition restored and running',
          );
        } else if (task.restore.attempt === undefined && now >= task.restore.retryAt) due.push(task);
      }
    }
    if (due.length === 0) return;
    const run = restoreTasks(settings, due);
    for (const task of due) restoreRuns.set(task, run);
    const attempt = run.done
      .then(async (result) => {
        await lookUpCommitted(due.filter((t) => t.state === 'restoring'));
        return result;
      })
      .then(
        ({ durationMs, records }) => {
          for (const task of due) {
            restoreRuns.delete(task);
            task.restore.attempt = undefined;
            if (task.state !== 'restoring') continue;
            task.finishRestore();
            task.restore.done = true;
            task.restore.failures = 0;
          }
          for (const topic of new Set(due.flatMap((t) => t.changelogs().map((c) => c.topic))))
            instrument('stream.restore', { topic }, durationMs / 1000);
          log.info(
            { partitions: due.map((t) => `${t.topic}[${t.partition}]`), records, durationMs },
            'changelogs restored',
          );
        },
        (error: unknown) => {
          for (const task of due) {
            restoreRuns.delete(task);
            task.restore.attempt = undefined;
            if (task.state !== 'restoring') continue;
            task.restore.failures++;
            task.restore.retryAt =
              Date.now() +
              backoffDelay(task.restore.failures, RESTORE_RETRY_INITIAL_MS, RESTORE_RETRY_MAX_MS);
          }
          if (!closing)
            log.warn(
              { err: error, partitions: due.map((t) => `${t.topic}[${t.partition}]`) },
              'restore failed; retrying after a back-off',
            );
        },
      );
    for (const task of due) task.restore.attempt = attempt;
  }

  function closeTask(task: StreamTask<V>): void {
    const run = restoreRuns.get(task);
    restoreRuns.delete(task);
    task.close();
    // The run's reader goes once none of its tasks wants it any more (a revoke during restore).
    if (run !== undefined && ![...restoreRuns.values()].includes(run)) run.cancel();
  }

  /** Where each task starts: the group's committed offset (looked up while it is still paused). */
  async function lookUpCommitted(due: readonly StreamTask<V>[]): Promise<void> {
    const found = await call<{ topic: string; partition: number; offset?: number }[]>('committed', (cb) =>
      consumer.committed(
        due.map((t) => ({ topic: t.topic, partition: t.partition })),
        10_000,
        cb as never,
      ),
    );
    for (const { topic, partition, offset } of found) {
      const task = tasks.get(keyOf(topic, partition));
      if (task !== undefined && typeof offset === 'number' && offset >= 0) task.fetchFrom = BigInt(offset);
    }
  }

  function seek(task: StreamTask<V>, offset: bigint): Promise<void> {
    return call('seek', (cb) =>
      consumer.seek({ topic: task.topic, partition: task.partition, offset: Number(offset) }, 0, cb),
    ).catch((error: unknown) =>
      log.warn(
        { err: error, topic: task.topic, partition: task.partition, offset: String(offset) },
        'seek failed',
      ),
    );
  }

  // ---- transactions --------------------------------------------------------------------------
  function dirtyTasks(): StreamTask<V>[] {
    return [...tasks.values()].filter((t) => t.dirty);
  }

  async function commit(): Promise<void> {
    if (!producer.inTransaction) return;
    const started = performance.now();
    const dirty = dirtyTasks().filter((t) => t.state === 'running' || t.state === 'revoked');
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
      consumer,
      opTimeoutMs,
    );
    await producer.commit(opTimeoutMs);
    const seconds = (performance.now() - started) / 1000;
    for (const task of dirty) {
      const records = task.records;
      task.committed(instrument);
      instrument('stream.batch', { topic: task.topic }, records);
    }
    instrument('stream.transaction', {}, seconds);
    instrument('stream.batch.seconds', {}, (Date.now() - txStartedAt) / 1000);
    txRecords = 0;
  }

  /** Aborts the open transaction and rewinds every partition it held to its first record. */
  async function abort(reason: string): Promise<void> {
    const dirty = dirtyTasks();
    try {
      await producer.abort(opTimeoutMs);
    } finally {
      txRecords = 0;
      for (const task of dirty) {
        const rewind = task.aborted();
        if (rewind !== undefined && task.state === 'running') {
          await call('seek', (cb) =>
            consumer.seek({ topic: task.topic, partition: task.partition, offset: Number(rewind) }, 0, cb),
          ).catch((error: unknown) =>
            log.warn({ err: error, topic: task.topic, partition: task.partition }, 'rewind failed'),
          );
        }
      }
      if (dirty.length > 0) {
        instrument('stream.batch.retry', {});
        log.warn(
          { reason, partitions: dirty.map((t) => `${t.topic}[${t.partition}]`) },
          'transaction aborted',
        );
      }
    }
  }

  /** The producer was fenced: forget the transaction, and go on with a new producer (unless it keeps happening). */
  async function replaceProducer(error: unknown): Promise<void> {
    const now = Date.now();
    fencings.push(now);
    while (fencings.length > 0 && now - fencings[0]! > FENCING_WINDOW_MS) fencings.shift();
    for (const task of dirtyTasks()) {
      const rewind = task.aborted();
      if (rewind !== undefined && task.state === 'running') {
        await call('seek', (cb) =>
          consumer.seek({ topic: task.topic, partition: task.partition, offset: Number(rewind) }, 0, cb),
        ).catch(() => undefined);
      }
    }
    txRecords = 0;
    await producer.close();
    if (fencings.length > FENCINGS_ALLOWED) {
      stop(
        new StreamAppStoppedError(
          `producer ${memberId} fenced repeatedly: another instance runs with instance id ${instanceId}`,
          { cause: error },
        ),
      );
      return;
    }
    log.warn(
      { err: error },
      'transactional producer fenced (its transaction timed out, or an instance with our id started); starting a new one',
    );
    producer = newProducer();
    await producer.open();
    watchProducer(producer);
  }

  async function onFailure(error: unknown): Promise<void> {
    const kind = classifyError(error);
    if (kind === 'fatal') {
      stop(toKafkaError(error));
      return;
    }
    if (kind === 'fenced') {
      await replaceProducer(error);
      return;
    }
    consecutiveFailures++;
    instrument('stream.batch.retry', {});
    log.warn({ err: error, attempt: consecutiveFailures }, 'processing failed; aborting and retrying');
    try {
      await abort('error');
    } catch (abortError) {
      const abortKind = classifyError(abortError);
      if (abortKind === 'fatal') stop(toKafkaError(abortError));
      else await replaceProducer(abortError);
    }
    await sleep(backoffDelay(consecutiveFailures, RETRY_INITIAL_MS, RETRY_MAX_MS));
  }

  // ---- rebalances ----------------------------------------------------------------------------
  async function handleRebalances(): Promise<void> {
    while (events.length > 0 && !closing && failure === undefined) {
      const event = events.shift()!;
      if (event.kind === 'assign') {
        consumer.incrementalAssign(event.partitions);
        joined = true;
        for (const { topic, partition } of event.partitions) {
          const source = sources.get(topic);
          if (source === undefined) continue;
          const key = keyOf(topic, partition);
          const old = tasks.get(key);
          if (old !== undefined) closeTask(old);
          // A new task pauses its partition at once; it is resumed when its state is restored.
          tasks.set(key, new StreamTask<V>({ topology, source, partition, port, logger: log }));
        }
        log.info(
          { partitions: event.partitions.map((p) => `${p.topic}[${p.partition}]`) },
          'partitions assigned',
        );
        continue;
      }
      if (event.lost) {
        // Lost: another member may own them already; nothing of this transaction may commit.
        if (producer.inTransaction) await abort('partitions lost');
      } else if (producer.inTransaction) {
        // Revoked in order: what was processed is committed before the partitions are given back.
        await commit().catch(async (error: unknown) => {
          log.warn({ err: error }, 'commit before revoke failed; aborting');
          await abort('commit before revoke failed').catch((abortError: unknown) => onFailure(abortError));
        });
      }
      for (const { topic, partition } of event.partitions) {
        const task = tasks.get(keyOf(topic, partition));
        if (task === undefined) continue;
        tasks.delete(keyOf(topic, partition));
        closeTask(task);
      }
      consumer.incrementalUnassign(event.partitions);
      log.info(
        { partitions: event.partitions.map((p) => `${p.topic}[${p.partition}]`), lost: event.lost },
        event.lost ? 'partitions lost' : 'partitions revoked',
      );
    }
  }

  // ---- processing ----------------------------------------------------------------------------
  async function serialize(task: StreamTask<V>, outputs: readonly Outgoing[]): Promise<OutRecord[]> {
    const out: OutRecord[] = [];
    for (const o of outputs) {
      const record: OutRecord = {
        topic: o.sink.topic,
        partition: o.partition,
        key: Buffer.from(o.key, 'utf8'),
        value: o.value === null ? null : await o.sink.serialize(o.value),
        timestamp: o.timestamp,
        headers: o.headers,
      };
      const limit = limits.get(record.topic) ?? 1_048_588;
      const size = recordBytes(record);
      if (size > limit)
        throw new OutputTooLargeError(
          `an output of ${size} bytes to ${record.topic} exceeds its max.message.bytes ${limit} (${task.topic}[${task.partition}])`,
        );
      out.push(record);
    }
    return out;
  }

  /** A record that cannot be processed goes to the topology's dead-letter sink (or is skipped and counted). */
  async function deadLetter(task: StreamTask<V>, record: InputRecord<V>, why: RecordFailure): Promise<void> {
    task.undoRecord();
    const hook = topology.deadLetter;
    const labels = { topic: task.topic, reason: why.reason };
    task.log.warn(
      { err: why.error, offset: record.offset, key: record.key, reason: why.reason },
      'record dead-lettered',
    );
    if (hook === undefined) {
      task.addEvent('stream.skipped', labels);
      return;
    }
    const sink = sinks.get(hook.sink);
    if (sink === undefined) throw new TypeError(`no sink named ${hook.sink} in ${topology.name}`);
    const { result } = task.withContext(record, (context) => hook.build(record, why, context));
    let serialized: OutRecord[];
    try {
      serialized = await serialize(task, [
        {
          sink,
          key: result.key,
          value: result.value,
          partition: sink.copartitioned ? task.partition : undefined,
          timestamp: record.timestamp,
          headers: undefined,
        },
      ]);
    } catch (error) {
      if (isTransientSerializeError(error)) throw error;
      task.undoRecord();
      task.log.error(
        { err: error, offset: record.offset },
        'the dead letter itself cannot be written; record skipped',
      );
      task.addEvent('stream.skipped', labels);
      return;
    }
    for (const r of serialized) await producer.send(r);
    task.addEvent('stream.dead-letter', labels);
  }

  async function processMessage(task: StreamTask<V>, message: Message): Promise<void> {
    const offset = BigInt(message.offset);
    // Fetched before a rewind: already done, or to be fetched again.
    if (task.nextOffset !== undefined && offset < task.nextOffset) return;
    const source = sources.get(task.topic)!;
    const key = message.key === undefined || message.key === null ? null : Buffer.from(message.key);
    const timestamp = message.timestamp ?? 0;
    const value = await source.deserialize({
      topic: task.topic,
      partition: task.partition,
      offset: String(offset),
      key,
      value: message.value ?? null,
      timestamp,
    });
    const headers: Record<string, string> = {};
    for (const header of message.headers ?? []) {
      for (const [name, v] of Object.entries(header))
        headers[name] = Buffer.isBuffer(v) ? v.toString('utf8') : String(v);
    }
    const record: InputRecord<V> = {
      topic: task.topic,
      partition: task.partition,
      offset: String(offset),
      key: key === null ? null : key.toString('utf8'),
      value,
      timestamp,
      headers,
    };
    if (!producer.inTransaction) {
      await producer.begin();
      txStartedAt = Date.now();
    }
    txRecords++;
    const result = task.process(record, offset);
    if ('failure' in result) {
      await deadLetter(task, record, result.failure);
      return;
    }
    let serialized: OutRecord[];
    try {
      serialized = await serialize(task, result.outputs);
    } catch (error) {
      if (isTransientSerializeError(error)) throw error;
      const reason = error instanceof OutputTooLargeError ? 'output-too-large' : 'processor-error';
      await deadLetter(task, record, { reason, message: (error as Error).message, error });
      return;
    }
    for (const r of serialized) await producer.send(r);
    task.keepRecord();
  }

  async function followPositions(): Promise<void> {
    const running = [...tasks.values()].filter((t) => t.machine.running);
    if (running.length === 0) return;
    for (const { topic, partition, offset } of consumer.position(
      running.map((t) => ({ topic: t.topic, partition: t.partition })),
    )) {
      if (typeof offset !== 'number' || offset < 0) continue;
      const task = tasks.get(keyOf(topic, partition));
      if (task === undefined) continue;
      const position = BigInt(offset);
      // Only past what this instance committed itself (or is about to): never ahead of a record.
      if (!task.dirty && (task.committedOffset === undefined || position <= task.committedOffset)) continue;
      if (!producer.inTransaction) {
        await producer.begin();
        txStartedAt = Date.now();
      }
      task.advanceTo(position);
    }
  }

  function consume(): Promise<Message[]> {
    return call<Message[]>('consume', (cb) => consumer.consume(maxBatchRecords, cb as never));
  }

  async function runOnce(): Promise<void> {
    await handleRebalances();
    if (closing || failure !== undefined) return;
    advanceRestores();
    const messages = await consume();
    const last = new Map<string, { topic: string; partition: number; offset: number }>();
    let complete = true;
    /** Records handed over but not processed: the consumer's position is past them, so they are fetched again. */
    const unprocessed = new Map<string, { task: StreamTask<V>; offset: number }>();
    for (const message of messages) {
      const key = keyOf(message.topic, message.partition);
      const task = tasks.get(key);
      // A rebalance stops the batch (a lost partition must abort before anything else).
      if (events.length > 0 || closing || failure !== undefined) complete = false;
      if (task === undefined || !task.machine.owned) continue;
      if (!complete || !task.machine.running) {
        if (!unprocessed.has(key)) unprocessed.set(key, { task, offset: message.offset });
        continue;
      }
      await processMessage(task, message);
      last.set(key, message);
    }
    for (const { task, offset } of unprocessed.values()) {
      if (task.machine.running) await seek(task, BigInt(offset));
      // Not running yet (fetched just before its pause): fetched again from here once it runs.
      else task.fetchFrom ??= BigInt(offset);
    }
    // Every fetched record was processed: offsets follow the consumer's position, which moves past
    // transaction markers (a read_committed reader never receives them), so a caught-up lag is zero.
    if (complete) await followPositions();
    for (const { topic, partition, offset } of last.values()) {
      const { highOffset } = consumer.getWatermarkOffsets(topic, partition);
      if (typeof highOffset === 'number' && highOffset >= 0)
        instrument(
          'stream.lag',
          { topic, partition: String(partition) },
          Math.max(0, highOffset - offset - 1),
        );
    }
    if (
      producer.inTransaction &&
      (txRecords >= commitMaxRecords || Date.now() - txStartedAt >= commitIntervalMs || events.length > 0)
    ) {
      if (events.some((e) => e.kind === 'revoke' && e.lost)) return; // handleRebalances aborts it
      await commit();
    }
    consecutiveFailures = 0;
  }

  async function loop(): Promise<void> {
    while (!closing && failure === undefined) {
      try {
        await runOnce();
      } catch (error) {
        await onFailure(error).catch((e: unknown) => stop(toKafkaError(e)));
      }
    }
    // Shutting down: a graceful close commits what was processed; a failure leaves it to the abort.
    try {
      if (producer.inTransaction) {
        if (failure === undefined) await commit().catch(() => abort('closing'));
        else await abort('stopping');
      }
    } catch (error) {
      log.debug({ err: error }, 'final transaction not completed');
    }
    finished = true;
    for (const task of tasks.values()) closeTask(task);
    tasks.clear();
    // Events the loop did not handle are acknowledged now (an assignment after close makes no task).
    for (const event of events.splice(0)) {
      try {
        if (event.kind === 'assign') consumer.incrementalAssign(event.partitions);
        else consumer.incrementalUnassign(event.partitions);
      } catch {
        // the consumer is going away
      }
    }
    await disconnect(consumer, 10_000);
    await producer.close();
  }

  await connect(consumer);
  consumer.subscribe([...sources.keys()]);
  log.info({ sources: [...sources.keys()], transactionalId: memberId }, 'stream app started');
  const done = loop();
  const stopped = done.then(
    () => undefined,
    (error: unknown) => {
      failure ??= toKafkaError(error);
    },
  );

  return {
    isReady: () =>
      joined && !closing && failure === undefined && [...tasks.values()].every((t) => t.machine.running),
    tasks: () =>
      [...tasks.values()].map((t) => ({
        topic: t.topic,
        partition: t.partition,
        status: t.state,
        streamTime: t.streamTime,
        stores: Object.fromEntries(t.storeSizes()),
        restoreFailures: t.restore.failures,
      })),
    stopped,
    failure: () => failure,
    async close() {
      closing = true;
      await stopped;
      log.info('stream app stopped');
    },
  };
}
