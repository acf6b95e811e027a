// One measured part of `npm run bench:process` in a process of its own, so its CPU (and a --cpu-prof
// profile) is its alone: the bare pass-through, the dedupe-router, the tables stage, or a restore of the
// dedupe changelog. Driven over IPC by tools/bench/process.ts: `count` → records so far, `stop` → exit.
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { liveDedupeTopology, startDedupeRouter } from '../../processors/dedupe-router/main.js';
import type { RawInput } from '../../processors/dedupe-router/poison.js';
import { startTables } from '../../processors/tables/main.js';
import { loadConfig } from '../../runtime/config.js';
import { kafkaSettings } from '../../runtime/kafka/settings.js';
import { restoreTasks } from '../../runtime/streams/restore.js';
import { StreamTask } from '../../runtime/streams/stream-task.js';
import { registryAccess } from '../../schemas/registry-access.js';
import { createSerde } from '../../schemas/serde.js';
import { fanOutTopics, runPassThrough } from './process-passthrough.js';

export type WorkerMode = 'passthrough' | 'router' | 'tables' | 'restore';

export interface WorkerArgs {
  mode: WorkerMode;
  /** restore: the changelog's partitions (a new owner of them all). */
  partitions?: number;
  /** passthrough: the records to copy before it stops by itself. */
  expected?: number;
  /** passthrough: a transaction commits after this many records or this long (the runtime's 1,000 / 100 ms). */
  commitMaxRecords?: number;
  commitIntervalMs?: number;
  /** passthrough: output topic and group. */
  topic?: string;
  groupId?: string;
  /** passthrough: writes the router's records per record read (fanOutTopics(prefix)), not one copy. */
  fanOut?: boolean;
}

export type ToWorker = { type: 'count' } | { type: 'stop' };

export type FromWorker =
  | { type: 'started'; cpuSeconds: number }
  | ({ type: 'count'; hrUs: number } & Count)
  | {
      type: 'restored';
      records: number;
      ids: number;
      durationMs: number;
      firstRecordMs: number;
      cpuSeconds: number;
      /** The restore's span on the profile's clock (process.hrtime, µs). */
      hrFromUs: number;
      hrToUs: number;
    }
  | { type: 'stopped'; cpuSeconds: number; hrUs: number }
  | { type: 'failed'; message: string };

const send = (message: FromWorker, then: () => void = () => undefined) =>
  process.send!(message, undefined, {}, then);
const cpuSeconds = () => {
  const used = process.cpuUsage();
  return (used.user + used.system) / 1e6;
};
const hrUs = () => Number(process.hrtime.bigint() / 1000n);

const args = JSON.parse(process.env.BENCH_WORKER ?? '{}') as WorkerArgs;
const config = loadConfig({ ...process.env, LOG_LEVEL: 'warn' });
const logger = pino({ level: 'warn' });
const prefix = config.TOPIC_PREFIX;
const registry = new Registry();
let records = 0;
let transactions = 0;
/** Seconds the pass-through spent in sendOffsetsToTransaction + commitTransaction. */
let commitSeconds = 0;
let close: () => Promise<void> = async () => undefined;

export interface Count {
  /** Input records processed and committed so far. */
  records: number;
  /** Transactions committed so far. */
  transactions: number;
  /** Seconds spent committing them (the poll loop waits meanwhile). */
  commitSeconds: number;
}

/** The stream kit's own counters (records, and its transaction histogram), or the pass-through's. */
async function count(): Promise<Count> {
  if (args.mode !== 'router' && args.mode !== 'tables') return { records, transactions, commitSeconds };
  const sum = async (name: string, sample = name) => {
    const metric = registry.getSingleMetric(name);
    const values = metric ? (await metric.get()).values : [];
    return (values as { value: number; metricName?: string }[])
      .filter((v) => (v.metricName ?? name) === sample)
      .reduce((s, v) => s + v.value, 0);
  };
  const histogram = 'hookledger_stream_transaction_seconds';
  return {
    records: await sum('hookledger_stream_records_total'),
    transactions: await sum(histogram, `${histogram}_count`),
    commitSeconds: await sum(histogram, `${histogram}_sum`),
  };
}

async function start(): Promise<void> {
  const settings = kafkaSettings(config, `bench-${args.mode}`, logger);
  switch (args.mode) {
    case 'passthrough': {
      const run = runPassThrough({
        settings,
        input: `${prefix}webhooks.raw`,
        output: args.topic!,
        groupId: args.groupId!,
        expected: args.expected!,
        ...(args.commitMaxRecords === undefined ? {} : { commitMaxRecords: args.commitMaxRecords }),
        ...(args.commitIntervalMs === undefined ? {} : { commitIntervalMs: args.commitIntervalMs }),
        ...(args.fanOut ? { fanOut: fanOutTopics(prefix) } : {}),
        onCommit: (n, seconds) => {
          records += n;
          transactions++;
          commitSeconds += seconds;
        },
      });
      close = async () => {
        await run;
      };
      run.catch((error: unknown) => send({ type: 'failed', message: String(error) }));
      return;
    }
    case 'router':
    case 'tables': {
      const startStage = args.mode === 'router' ? startDedupeRouter : startTables;
      const stage = await startStage({ config, logger, registry });
      close = () => stage.close();
      return;
    }
    case 'restore': {
      // As a new owner of every partition restores: the runtime's restoreTasks (one group-less
      // read_committed reader, runtime/kafka/read-to-end.ts) into the router's tasks' DedupeStores.
      const topology = await liveDedupeTopology(
        config,
        createSerde({ ...registryAccess(config), clientId: 'bench-restore' }),
      );
      const source = topology.sources[0]!;
      const port = { pause: () => undefined, resume: () => undefined };
      const tasks = Array.from(
        { length: args.partitions ?? 1 },
        (_, partition) => new StreamTask<RawInput>({ topology, source, partition, port, logger }),
      );
      let firstAt = 0;
      for (const task of tasks) task.machine.transitionTo('restoring');
      // The time of the first record (the reader's connect and watermark look-ups come before it).
      const { restoreRecord } = StreamTask.prototype;
      for (const task of tasks) {
        task.restoreRecord = (store, record) => {
          firstAt ||= performance.now();
          task.restoreRecord = restoreRecord;
          task.restoreRecord(store, record);
        };
      }
      const before = cpuSeconds();
      const hrFromUs = hrUs();
      const started = performance.now();
      const { durationMs, records: restored } = await restoreTasks(settings, tasks).done;
      records = restored;
      const hrToUs = hrUs();
      let ids = 0;
      for (const task of tasks) {
        task.finishRestore();
        for (const size of task.storeSizes().values()) ids += size;
      }
      send({
        type: 'restored',
        records,
        ids,
        durationMs,
        firstRecordMs: firstAt === 0 ? durationMs : durationMs - (firstAt - started),
        cpuSeconds: cpuSeconds() - before,
        hrFromUs,
        hrToUs,
      });
      for (const task of tasks) task.close();
      return;
    }
  }
}

process.on('message', (message: ToWorker) => {
  if (message.type === 'count') {
    void count().then((c) => send({ type: 'count', hrUs: hrUs(), ...c }));
  } else if (message.type === 'stop') {
    const at = hrUs();
    void close()
      .catch((error: unknown) => logger.warn({ err: error }, 'close failed'))
      .finally(() => send({ type: 'stopped', cpuSeconds: cpuSeconds(), hrUs: at }, () => process.exit(0)));
  }
});
process.on('disconnect', () => process.exit(1));

send({ type: 'started', cpuSeconds: cpuSeconds() });
start().catch((error: unknown) => {
  send(
    { type: 'failed', message: error instanceof Error ? (error.stack ?? error.message) : String(error) },
    () => process.exit(1),
  );
});
