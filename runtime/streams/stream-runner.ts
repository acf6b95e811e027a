// Runs a topology on a consumer group: follows assignments, opens and restores partition tasks in
// the design's order, feeds them batches, and drops them when their partition moves away or is lost.
import type { Consumer, EachBatchPayload, Kafka, Producer } from 'kafkajs';
import type { Logger } from '../log.js';
import { PartitionLostError } from './errors.js';
import { type Guarantee, type Instrument, PartitionTask } from './partition-task.js';
import { restoreChangelog } from './restore.js';
import { retry } from './retry.js';
import { type Topology, validateTopology } from './topology.js';
import { Mutex, openIdempotentProducer } from './transactional-producers.js';

export interface StreamAppOptions<V> {
  kafka: Kafka;
  topology: Topology<V>;
  /** The consumer group, and the prefix of every transactional id (`<appId>-<topic>-<partition>`). */
  appId: string;
  guarantee: Guarantee;
  logger: Logger;
  instrument?: Instrument;
  /** ~10 s: a dead owner's open transaction blocks read_committed readers this long at most. */
  transactionTimeoutMs?: number;
  sessionTimeoutMs?: number;
  /** Batches of different partitions processed at once (each partition has its own producer). */
  partitionsConsumedConcurrently?: number;
  maxBytesPerPartition?: number;
}

export interface TaskStatus {
  topic: string;
  partition: number;
  status: PartitionTask<unknown>['status'];
  streamTime: number;
  stores: Record<string, number>;
}

export interface StreamApp {
  /** Joined its group, and every assigned partition's state is restored. */
  isReady(): boolean;
  tasks(): TaskStatus[];
  /** Settles when the consumer stopped for good (a crash it will not restart from). */
  readonly stopped: Promise<void>;
  close(): Promise<void>;
}

const keyOf = (topic: string, partition: number) => `${topic}\u0000${partition}`;

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Waits for a task's restore while keeping the group membership alive (a long restore must not look dead). */
async function waitHeartbeating(ready: Promise<void>, heartbeat: () => Promise<void>): Promise<void> {
  let settled = false;
  const watched = ready.finally(() => {
    settled = true;
  });
  while (!settled) {
    await Promise.race([watched.catch(() => undefined), sleep(1_000)]);
    if (!settled) await heartbeat();
  }
  await watched;
}

export async function startStreamApp<V>(options: StreamAppOptions<V>): Promise<StreamApp> {
  const {
    kafka,
    appId,
    guarantee,
    logger,
    instrument = () => undefined,
    transactionTimeoutMs = 10_000,
    sessionTimeoutMs = 30_000,
    partitionsConsumedConcurrently = 1,
    maxBytesPerPartition = 1_048_576,
  } = options;
  const topology = validateTopology(options.topology);
  const log = logger.child({ component: 'stream-runner', app: appId });
  const sources = new Map(topology.sources.map((s) => [s.topic, s]));
  const tasks = new Map<string, PartitionTask<V>>();
  const starting = new WeakMap<PartitionTask<V>, Promise<void>>();
  /** Partitions fenced away from us: skipped until the next assignment says who owns them. */
  const lost = new Set<string>();
  let joined = false;
  let closing = false;

  let shared: { producer: Producer; mutex: Mutex } | undefined;
  if (guarantee === 'at-least-once')
    shared = { producer: await openIdempotentProducer(kafka), mutex: new Mutex() };

  const consumer: Consumer = kafka.consumer({
    groupId: appId,
    readUncommitted: false,
    sessionTimeout: sessionTimeoutMs,
    heartbeatInterval: Math.max(500, Math.floor(sessionTimeoutMs / 10)),
    maxBytesPerPartition,
    allowAutoTopicCreation: false,
  });

  const createTask = (topic: string, partition: number) =>
    new PartitionTask<V>({
      topology,
      source: sources.get(topic)!,
      partition,
      kafka,
      guarantee,
      appId,
      groupId: appId,
      transactionTimeoutMs,
      ...(shared ? { shared } : {}),
      logger: log,
      instrument,
    });

  /**
   * The design's order for newly assigned partitions: (1) every producer initialised, which fences
   * zombies and aborts their open transactions; (2) their changelogs restored read_committed to the
   * end, one throwaway reader per changelog topic for all of them; (3) then they process.
   */
  async function startTasks(fresh: PartitionTask<V>[]): Promise<void> {
    await retry(
      async () => {
        const live = fresh.filter((t) => t.status !== 'closed');
        await Promise.all(live.map((t) => t.open()));
        const byChangelog = new Map<string, { store: string; tasks: Map<number, PartitionTask<V>> }>();
        for (const task of live) {
          for (const { store, topic } of task.changelogs()) {
            const key = `${store}\u0000${topic}`;
            const entry = byChangelog.get(key) ?? { store, tasks: new Map<number, PartitionTask<V>>() };
            byChangelog.set(key, entry);
            entry.tasks.set(task.partition, task);
          }
        }
        for (const [key, { store, tasks: byPartition }] of byChangelog) {
          const topic = key.split('\u0000')[1]!;
          const { durationMs, records } = await restoreChangelog({
            kafka,
            topic,
            partitions: [...byPartition.keys()],
            onRecord: (partition, record) => byPartition.get(partition)?.restoreRecord(store, record),
            logger: log,
            groupIdPrefix: appId,
          });
          instrument('stream.restore', { topic }, durationMs / 1000);
          log.info(
            { changelog: topic, records: Object.fromEntries(records), durationMs },
            'changelog restored',
          );
        }
        for (const task of live) if (task.status === 'restoring') task.finishRestore();
      },
      {
        retries: 5,
        initialDelayMs: 500,
        onRetry: (error, attempt) => log.warn({ err: error, attempt }, 'opening partitions failed; retrying'),
      },
    );
  }

  let memberId: string | undefined;
  /** The partitions of the latest assignment. */
  const assigned = new Set<string>();

  function reconcile(assignment: Record<string, number[]>, member: string): void {
    // A join can complete while the app closes (a woken zombie rejoins as it is told to stop): opening
    // partitions then would start producers and restore readers that nothing closes any more.
    if (closing) return;
    joined = true;
    if (memberId !== undefined && member !== memberId) {
      // We were out of the group (a long pause, a lost session) and joined again as a new member:
      // other instances may have owned and advanced any of our partitions meanwhile, so nothing
      // held here is trusted. A member that kept its id saw every generation, and so every move.
      dropAll('rejoined the group as a new member');
    }
    memberId = member;
    assigned.clear();
    for (const [topic, partitions] of Object.entries(assignment)) {
      for (const partition of partitions) assigned.add(keyOf(topic, partition));
    }
    for (const [key, task] of tasks) {
      if (assigned.has(key)) continue;
      // Moved to another instance: its state and producer go; the new owner restores its own.
      tasks.delete(key);
      void task.close();
    }
    const fresh: PartitionTask<V>[] = [];
    for (const [topic, partitions] of Object.entries(assignment)) {
      for (const partition of partitions) {
        const key = keyOf(topic, partition);
        if (tasks.has(key)) continue;
        const task = createTask(topic, partition);
        tasks.set(key, task);
        fresh.push(task);
      }
    }
    const paused = [...lost];
    lost.clear();
    if (paused.length > 0) {
      const byTopic = new Map<string, number[]>();
      for (const key of paused) {
        const [topic, partition] = key.split('\u0000') as [string, string];
        if (!assigned.has(key)) continue;
        byTopic.set(topic, [...(byTopic.get(topic) ?? []), Number(partition)]);
      }
      if (byTopic.size > 0)
        consumer.resume([...byTopic].map(([topic, partitions]) => ({ topic, partitions })));
    }
    log.info({ assignment, opening: fresh.map((t) => `${t.topic}[${t.partition}]`) }, 'assignment');
    if (fresh.length > 0) {
      const started = startTasks(fresh);
      for (const task of fresh) starting.set(task, started);
      started.catch((error: unknown) => log.error({ err: error }, 'could not open assigned partitions'));
    }
  }

  function dropAll(reason: string): void {
    for (const task of tasks.values()) void task.close();
    if (tasks.size > 0) log.warn({ reason, partitions: tasks.size }, 'dropping every partition state');
    tasks.clear();
  }

  /** When a heartbeat last succeeded: proof that our member id, generation and assignment are current. */
  let lastHeartbeatAt = 0;
  consumer.on(consumer.events.HEARTBEAT, () => {
    lastHeartbeatAt = Date.now();
  });
  consumer.on(consumer.events.GROUP_JOIN, ({ payload }) =>
    reconcile(payload.memberAssignment, payload.memberId),
  );

  let markStopped!: () => void;
  const stopped = new Promise<void>((resolve) => {
    markStopped = resolve;
  });
  consumer.on(consumer.events.CRASH, ({ payload }) => {
    // After a crash kafkajs leaves the group and joins again: another instance may have owned our
    // partitions meanwhile, so nothing held here can be trusted any more.
    dropAll('consumer crashed');
    log.error({ err: payload.error, restart: payload.restart }, 'consumer crashed');
    if (!payload.restart) markStopped();
  });

  async function eachBatch({
    batch,
    heartbeat,
    resolveOffset,
    pause,
    isRunning,
    commitOffsetsIfNecessary,
  }: EachBatchPayload) {
    const { topic, partition } = batch;
    const key = keyOf(topic, partition);
    if (lost.has(key)) {
      pause();
      return;
    }
    let task = tasks.get(key);
    if (task === undefined) {
      // Not seen in an assignment event (should not happen): open it like one.
      task = createTask(topic, partition);
      tasks.set(key, task);
      const started = startTasks([task]);
      starting.set(task, started);
    }
    await waitHeartbeating(starting.get(task) ?? Promise.resolve(), heartbeat);
    if (task.status !== 'ready' || !isRunning() || closing) return;
    instrument('stream.lag', { topic, partition: String(partition) }, Number(batch.offsetLag()));
    try {
      await task.processBatch({
        messages: batch.messages,
        lastOffset: batch.lastOffset(),
        heartbeat,
        ...(guarantee === 'at-least-once'
          ? {
              commitOffset: (offset: string) =>
                commitOffsetsIfNecessary({ topics: [{ topic, partitions: [{ partition, offset }] }] }),
            }
          : {}),
      });
    } catch (error) {
      if (error instanceof PartitionLostError) {
        void task.close();
        // A newer assignment may already have replaced this task (we woke up from a pause): then
        // the fresh task, restored after its own fencing, is the one that counts.
        if (tasks.get(key) !== task) return;
        // Fenced: another instance owns the partition now. Drop everything until an assignment
        // gives it back (a restore then rebuilds the state, never this instance's stale copy).
        tasks.delete(key);
        lost.add(key);
        pause();
        // Normally a rebalance follows and says who owns it. If none comes and the partition is
        // still ours a session later, whoever fenced us was the stale one: take it back, as on an
        // assignment (fence, restore, process). "Still ours" needs proof: a heartbeat that succeeded
        // after the fencing (it carries our member id and generation). A woken zombie's heartbeats
        // fail until it rejoins, so it never takes back what it lost, which would fence the real
        // owner and make the two fence each other in turn until the zombie's rejoin.
        const fencedAt = Date.now();
        const takeBack = () => {
          if (!lost.has(key) || closing || !assigned.has(key)) return;
          if (lastHeartbeatAt <= fencedAt) {
            setTimeout(takeBack, sessionTimeoutMs).unref();
            return;
          }
          lost.delete(key);
          consumer.resume([{ topic, partitions: [partition] }]);
        };
        setTimeout(takeBack, sessionTimeoutMs).unref();
        return;
      }
      throw error;
    }
    resolveOffset(batch.lastOffset());
    await heartbeat();
  }

  await consumer.connect();
  await consumer.subscribe({ topics: [...sources.keys()], fromBeginning: true });
  await consumer.run({
    autoCommit: false,
    eachBatchAutoResolve: false,
    partitionsConsumedConcurrently,
    eachBatch,
  });
  log.info({ sources: [...sources.keys()], guarantee }, 'stream app started');

  return {
    isReady: () => joined && !closing && [...tasks.values()].every((t) => t.ready),
    tasks: () =>
      [...tasks.values()].map((t) => ({
        topic: t.topic,
        partition: t.partition,
        status: t.status,
        streamTime: t.streamTime,
        stores: Object.fromEntries(t.storeSizes()),
      })),
    stopped,
    async close() {
      if (closing) return;
      closing = true;
      // Stops fetching and waits for the batch in flight, then leaves the group.
      await consumer.disconnect();
      await Promise.all([...tasks.values()].map((t) => t.close()));
      tasks.clear();
      await shared?.producer.disconnect();
      markStopped();
      log.info('stream app stopped');
    },
  };
}
