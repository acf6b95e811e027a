// One measured part of `npm run bench:process` in a process of its own, so its CPU (and a --cpu-prof
// profile) is its alone: the bare pass-through, the dedupe-router, the tables stage, or a restore of the
// dedupe changelog. Driven over IPC by tools/bench/process.ts: `count` → records so far, `stop` → exit.
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { DedupeStore } from '../../processors/dedupe-router/dedupe-store.js';
import { startDedupeRouter } from '../../processors/dedupe-router/main.js';
import { startTables } from '../../processors/tables/main.js';
import { loadConfig } from '../../runtime/config.js';
import { createKafka } from '../../runtime/kafka/client.js';
import { readToEnd } from '../../runtime/kafka/read-to-end.js';
import { runPassThrough } from './process-passthrough.js';

export type WorkerMode = 'passthrough' | 'router' | 'tables' | 'restore';

export interface WorkerArgs {
  mode: WorkerMode;
  concurrency: number;
  /** passthrough: the records to copy before it stops by itself. */
  expected?: number;
  /** passthrough: output topic and group; restore: the changelog topic. */
  topic?: string;
  groupId?: string;
}

export type ToWorker = { type: 'count' } | { type: 'stop' };

export type FromWorker =
  | { type: 'started'; cpuSeconds: number }
  | { type: 'count'; records: number; hrUs: number }
  | {
      type: 'restored';
      records: number;
      ids: number;
      durationMs: number;
      firstRecordMs: number;
      cpuSeconds: number;
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
let close: () => Promise<void> = async () => undefined;

/** Input records processed and committed so far (the stream kit's own counter, or the pass-through's). */
async function count(): Promise<number> {
  if (args.mode !== 'router' && args.mode !== 'tables') return records;
  const metric = registry.getSingleMetric('hookledger_stream_records_total');
  const values = metric ? (await metric.get()).values : [];
  return values.reduce((sum, v) => sum + v.value, 0);
}

async function start(): Promise<void> {
  const kafka = createKafka({ brokers: config.KAFKA_BROKERS, clientId: `bench-${args.mode}`, logger });
  switch (args.mode) {
    case 'passthrough': {
      const run = runPassThrough({
        kafka,
        input: `${prefix}webhooks.raw`,
        output: args.topic!,
        groupId: args.groupId!,
        expected: args.expected!,
        concurrency: args.concurrency,
        onRecords: (n) => {
          records += n;
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
      const stage = await startStage({ config, logger, registry, concurrency: args.concurrency });
      close = () => stage.close();
      return;
    }
    case 'restore': {
      // As a new owner restores: every changelog record into its partition's store, then expiry.
      const stores = new Map<number, { store: DedupeStore; streamTime: number }>();
      const admin = kafka.admin();
      await admin.connect();
      const partitions = (await admin.fetchTopicOffsets(args.topic!)).map((o) => o.partition);
      await admin.disconnect();
      for (const p of partitions)
        stores.set(p, { store: new DedupeStore(config.DEDUPE_WINDOW), streamTime: 0 });
      const before = cpuSeconds();
      const started = performance.now();
      let firstAt = 0;
      const { durationMs } = await readToEnd({
        settings: { brokers: config.KAFKA_BROKERS, clientId: 'bench-restore', logger },
        topic: args.topic!,
        partitions: partitions.map((partition) => ({ partition })),
        onRecord: ({ partition, key, value, timestamp }) => {
          const record = { key: key?.toString('utf8') ?? '', value, timestamp };
          if (firstAt === 0) firstAt = performance.now();
          const entry = stores.get(partition)!;
          entry.store.restore(record);
          if (record.timestamp > entry.streamTime) entry.streamTime = record.timestamp;
          records++;
        },
      });
      let ids = 0;
      for (const { store, streamTime } of stores.values()) {
        store.restored(streamTime);
        ids += store.size;
      }
      send({
        type: 'restored',
        records,
        ids,
        durationMs,
        firstRecordMs: firstAt === 0 ? durationMs : durationMs - (firstAt - started),
        cpuSeconds: cpuSeconds() - before,
      });
      return;
    }
  }
}

process.on('message', (message: ToWorker) => {
  if (message.type === 'count') {
    void count().then((n) => send({ type: 'count', records: n, hrUs: hrUs() }));
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
