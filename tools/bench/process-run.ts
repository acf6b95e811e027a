// The moving parts of `npm run bench:process`: topics and the pre-filled raw topic, worker processes
// (tools/bench/process-worker.ts) and the steady-state window each one is measured over.
import { type ChildProcess, spawn } from 'node:child_process';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import type { GroupResults, Producer } from '@confluentinc/kafka-javascript';
import type { TopicAdmin } from '../../runtime/kafka/admin.js';
import { ensureTopics } from '../../runtime/kafka/ensure-topics.js';
import {
  call,
  connect,
  createAdmin,
  createProducer,
  disconnect,
  type KafkaSettings,
} from '../../runtime/kafka/rdkafka.js';
import { createTopicAdmin } from '../../runtime/kafka/rdkafka-admin.js';
import { deliverAll, type OutRecord, routeDeliveryReports } from '../../runtime/kafka/write-records.js';
import { createSerde } from '../../schemas/serde.js';
import { topicNames, valueSubject } from '../../schemas/topics.js';
import { generateLoad } from '../../test/integration/processors-load.js';
import type { BenchStack } from './bench-stack.js';
import { benchTopicCatalog } from './bench-topics.js';
import { ROOT } from './children.js';
import { machineBusySeconds, peakRssMiB, processCpuSeconds } from './proc-stats.js';
import { fanOutTopics } from './process-passthrough.js';
import type { FromWorker, ToWorker, WorkerArgs } from './process-worker.js';

export const log = (message: string) => console.error(`bench:process ${message}`);
export const load1 = () => loadavg()[0]!;

/** The driver's admin connections: the TopicAdmin port, and a raw client for group offsets. */
export interface BenchAdmin extends TopicAdmin {
  /** Committed offsets of a group per `topic:partition` (-1: none). */
  committed(groupId: string, topics: readonly string[]): Promise<Map<string, number>>;
  close(): void;
}

export function openBenchAdmin(settings: KafkaSettings): BenchAdmin {
  const port = createTopicAdmin(settings, { component: 'bench-admin' });
  const raw = createAdmin(settings, 'bench-group-offsets');
  const partitionsOf = new Map<string, number[]>();
  const partitions = async (topic: string) => {
    let found = partitionsOf.get(topic);
    if (found === undefined) {
      found = (await port.watermarks(topic)).map((w) => w.partition);
      partitionsOf.set(topic, found);
    }
    return found;
  };
  return {
    ...port,
    async committed(groupId, topics) {
      const wanted: { topic: string; partition: number }[] = [];
      for (const topic of topics)
        for (const partition of await partitions(topic)) wanted.push({ topic, partition });
      const [group] = await call<GroupResults[]>(`committed offsets of ${groupId}`, (cb) =>
        raw.listConsumerGroupOffsets([{ groupId, partitions: wanted }], { timeout: 10_000 }, cb),
      );
      const out = new Map<string, number>();
      for (const p of group?.partitions ?? []) out.set(`${p.topic}:${p.partition}`, Number(p.offset));
      return out;
    },
    close() {
      port.close();
      raw.disconnect();
    },
  };
}

export interface Env {
  bench: BenchStack;
  settings: KafkaSettings;
  admin: BenchAdmin;
  partitions: number;
  brokerPid: number | undefined;
}

/** Records of the pre-fill in flight at most (librdkafka's queue holds 100,000 by default). */
const PREFILL_CHUNK = 20_000;

/** An idempotent acks=all librdkafka producer that batches hard: the pre-fill is not what is measured. */
async function prefillProducer(settings: KafkaSettings): Promise<Producer> {
  const producer = await connect(
    createProducer(
      settings,
      {
        'enable.idempotence': true,
        acks: -1,
        'linger.ms': 20,
        'batch.size': 1_000_000,
        'compression.type': 'none',
      },
      'bench-prefill',
    ),
  );
  routeDeliveryReports(producer);
  producer.setPollInBackground(true);
  return producer;
}

/** Creates the prefix's topics (and the pass-through's output), then fills its raw topic. */
export async function prefill(
  env: Env,
  prefix: string,
  ids: number,
  retries: number,
): Promise<{ records: number; meanValueBytes: number }> {
  const names = topicNames(prefix);
  const specs = benchTopicCatalog(prefix, env.partitions);
  const like = (name: string) => specs.find((s) => s.name === name)!;
  specs.push({ ...like(names.unique), name: `${prefix}passthrough` });
  const fanOut = fanOutTopics(prefix);
  specs.push(
    { ...like(names.unique), name: fanOut.unique },
    ...fanOut.entities.map((name) => ({ ...like(names.entity('user')), name })),
    { ...like(names.entity('user')), name: fanOut.commission },
    { ...like(names.dedupeChangelog), name: fanOut.changelog },
  );
  await ensureTopics(env.admin, specs);
  const serde = createSerde(env.bench.registry('bench-prefill'));
  await serde.registerAll(prefix);
  const schemaId = await serde.latestSchemaId(valueSubject(names.raw));
  const load = generateLoad({ ids, retries, startAt: Date.now() - 3_600_000 });
  const producer = await prefillProducer(env.settings);
  let bytes = 0;
  try {
    for (let i = 0; i < load.envelopes.length; i += PREFILL_CHUNK) {
      const slice = load.envelopes.slice(i, i + PREFILL_CHUNK);
      const records: OutRecord[] = await Promise.all(
        slice.map(async (e) => {
          const value = await serde.encode(schemaId, e);
          bytes += value.length;
          return { key: e.webhookId, value, timestamp: e.receivedAt };
        }),
      );
      await deliverAll(producer, names.raw, records);
    }
  } finally {
    await disconnect(producer);
  }
  return { records: load.envelopes.length, meanValueBytes: bytes / load.envelopes.length };
}

export interface Worker {
  child: ChildProcess;
  pid: number;
  spawnedAt: number;
  /** The worker's own CPU seconds once its modules were loaded (before connecting). */
  started: Promise<number>;
  next<T extends FromWorker['type']>(type: T): Promise<Extract<FromWorker, { type: T }>>;
  send(message: ToWorker): void;
  stop(): Promise<Extract<FromWorker, { type: 'stopped' }>>;
}

export function spawnWorker(
  env: Env,
  prefix: string,
  args: WorkerArgs,
  {
    profileDir,
    instanceId,
    extraEnv = {},
  }: { profileDir?: string; instanceId?: string; extraEnv?: Record<string, string> } = {},
): Worker {
  const child = spawn(
    process.execPath,
    [
      ...(profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : []),
      '--import',
      'tsx',
      join(ROOT, 'tools/bench/process-worker.ts'),
    ],
    {
      cwd: ROOT,
      env: {
        ...process.env,
        ...env.bench.env,
        TOPIC_PREFIX: prefix,
        // Instances of one app running at once need their own id (static member, transactional id).
        ...(instanceId === undefined ? {} : { HOOKLEDGER_INSTANCE_ID: instanceId }),
        ...extraEnv,
        BENCH_WORKER: JSON.stringify(args),
      },
      // The worker's logs go to our stderr: stdout carries only the report.
      stdio: ['ignore', 2, 2, 'ipc'],
    },
  );
  const waiting = new Map<string, ((m: FromWorker) => void)[]>();
  const failures: ((e: Error) => void)[] = [];
  let failed: Error | undefined;
  let stopping = false;
  const fail = (error: Error) => {
    failed ??= error;
    for (const reject of failures.splice(0)) reject(error);
  };
  child.on('message', (message: FromWorker) => {
    if (message.type === 'failed') return fail(new Error(`${args.mode} worker failed: ${message.message}`));
    waiting.get(message.type)?.shift()?.(message);
  });
  child.once('exit', (code) => {
    if (!stopping || code !== 0) fail(new Error(`${args.mode} worker exited (${code})`));
  });
  const next = <T extends FromWorker['type']>(type: T) =>
    new Promise<Extract<FromWorker, { type: T }>>((resolve, reject) => {
      if (failed) return reject(failed);
      failures.push(reject);
      const list = waiting.get(type) ?? [];
      waiting.set(type, list);
      list.push((m) => resolve(m as Extract<FromWorker, { type: T }>));
    });
  const worker: Worker = {
    child,
    pid: child.pid!,
    spawnedAt: performance.now(),
    started: next('started').then((m) => m.cpuSeconds),
    next,
    send: (message) => child.send(message),
    async stop() {
      stopping = true;
      const stopped = next('stopped');
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.send({ type: 'stop' });
      const message = await stopped;
      await exited;
      return message;
    },
  };
  return worker;
}

/** Kills a worker that is still running (after a failure elsewhere). */
export function killWorker(worker: Worker | undefined): void {
  if (worker && worker.child.exitCode === null && worker.child.signalCode === null)
    worker.child.kill('SIGKILL');
}

export interface Snapshot {
  at: number;
  worker: number;
  broker: number | undefined;
  machine: number;
  records: number;
  transactions: number;
  commitSeconds: number;
  hrUs: number;
}

export interface Window {
  records: number;
  seconds: number;
  /** Transactions committed in the window, and the seconds the worker spent committing them. */
  transactions: number;
  commitSeconds: number;
  workerCpu: number;
  brokerCpu: number | undefined;
  machineBusy: number;
  /** From spawning the worker to its first commit. */
  startupSeconds: number;
  totalRecords: number;
  hrFromUs: number;
  hrToUs: number;
  load1: number;
  peakRssMiB: number | undefined;
}

async function snapshot(env: Env, worker: Worker): Promise<Snapshot> {
  const at = performance.now();
  const cpu = processCpuSeconds(worker.pid) ?? Number.NaN;
  const broker = processCpuSeconds(env.brokerPid);
  const machine = machineBusySeconds();
  worker.send({ type: 'count' });
  const { records, transactions, commitSeconds, hrUs } = await worker.next('count');
  return { at, worker: cpu, broker, machine, records, transactions, commitSeconds, hrUs };
}

export interface Progress {
  /** Something was committed. */
  any: boolean;
  /** Everything was committed. */
  done: boolean;
}

/**
 * The steady-state window of a stage: from the first commit seen to the last (start-up, group join
 * and restore before it are not counted), with the CPU the worker, the broker and the machine used.
 */
export async function follow(
  env: Env,
  worker: Worker,
  progress: () => Promise<Progress>,
  { stallMs = 120_000 } = {},
): Promise<Window> {
  let first: Snapshot | undefined;
  let lastChange = performance.now();
  let lastSeen = '';
  const load = load1();
  for (;;) {
    const p = await progress();
    if (first === undefined && p.any) first = await snapshot(env, worker);
    if (first !== undefined && p.done) {
      const last = await snapshot(env, worker);
      // The worker counts a batch just after its commit returns: wait for the count to settle.
      let settled = last;
      for (;;) {
        await new Promise((r) => setTimeout(r, 100));
        worker.send({ type: 'count' });
        const again = await worker.next('count');
        if (again.records === settled.records) break;
        settled = { ...settled, ...again };
      }
      const records = settled.records;
      return {
        records: records - first.records,
        seconds: (last.at - first.at) / 1000,
        transactions: settled.transactions - first.transactions,
        commitSeconds: settled.commitSeconds - first.commitSeconds,
        workerCpu: last.worker - first.worker,
        brokerCpu:
          last.broker !== undefined && first.broker !== undefined ? last.broker - first.broker : undefined,
        machineBusy: last.machine - first.machine,
        startupSeconds: (first.at - worker.spawnedAt) / 1000,
        totalRecords: records,
        hrFromUs: first.hrUs,
        hrToUs: last.hrUs,
        load1: load,
        peakRssMiB: peakRssMiB(worker.pid),
      };
    }
    const seen = JSON.stringify(p);
    if (seen !== lastSeen) {
      lastSeen = seen;
      lastChange = performance.now();
    }
    if (first !== undefined && performance.now() - lastChange > stallMs) {
      throw new Error(`no progress for ${stallMs / 1000} s`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A group reading a non-transactional topic: done when the committed offsets add up to its records. */
export function rawProgress(
  env: Env,
  groupId: string,
  topic: string,
  total: number,
): () => Promise<Progress> {
  return async () => {
    const sum = [...(await env.admin.committed(groupId, [topic])).values()].reduce(
      (s, o) => s + Math.max(0, o),
      0,
    );
    return { any: sum > 0, done: sum >= total };
  };
}

/**
 * A group reading topics written in transactions: every partition ends with a commit marker, which a
 * read_committed reader never sees as a record, so it is done when each non-empty partition's committed
 * offset reached its end offset minus that one marker.
 */
export async function transactionalProgress(
  env: Env,
  groupId: string,
  topics: string[],
): Promise<() => Promise<Progress>> {
  const ends = new Map<string, number>();
  for (const topic of topics) {
    for (const w of await env.admin.watermarks(topic)) ends.set(`${topic}:${w.partition}`, w.high);
  }
  return async () => {
    const offsets = await env.admin.committed(groupId, topics);
    let any = false;
    let done = true;
    for (const [key, high] of ends) {
      const at = offsets.get(key) ?? -1;
      if (at > 0) any = true;
      if (high > 0 && at < high - 1) done = false;
    }
    return { any, done };
  };
}

/** Records in transactional topics up to their ends, markers included (an upper bound). */
export async function endOffsetSum(admin: TopicAdmin, topics: string[]): Promise<number> {
  let sum = 0;
  for (const topic of topics) for (const w of await admin.watermarks(topic)) sum += w.high;
  return sum;
}

/**
 * The bench's load is all valid, recent deliveries: a dead letter means the router took another path
 * than the one measured (its dates once aged past WEBHOOK_MAX_AGE, and every delivery went to the DLQ).
 */
export async function assertNothingDeadLettered(admin: TopicAdmin, dlqTopic: string): Promise<void> {
  const written = await endOffsetSum(admin, [dlqTopic]);
  if (written > 0)
    throw new Error(
      `the router wrote ${written} records (markers included) to ${dlqTopic}: the load must be routed, not dead-lettered`,
    );
}
