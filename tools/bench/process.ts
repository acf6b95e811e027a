// `npm run bench:process`: over one pre-filled raw topic (default 200,000 webhook ids + 20,000 retries),
// in one run: Kafka's consumer perf test, a bare librdkafka exactly-once pass-through (the runtime's
// transaction cadence, then ≥ 10k records a transaction), the dedupe-router and the tables stage over
// the entity streams the router wrote (both exactly-once), each in its own process with its CPU and
// the broker's per event; then the runtime's restore of the dedupe changelog the router wrote, heap per
// tracked id at 1M ids, and a CPU profile of the router (a separate, smaller pass). Every Kafka path
// is librdkafka (@confluentinc/kafka-javascript).
// Writes the Markdown section into docs/benchmarks.md between the bench:process markers.
// Uses KAFKA_BROKERS and SCHEMA_REGISTRY_URL when set (with the connection variables, as the product), else
// starts a local stack of its own.
import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { encodeDedupeDecision } from '../../processors/dedupe-router/dedupe-decision.js';
import { DedupeStore } from '../../processors/dedupe-router/dedupe-store.js';
import { dedupeRouterAppId } from '../../processors/dedupe-router/main.js';
import { tablesAppId } from '../../processors/tables/main.js';
import {
  CATCH_UP_COMMIT_INTERVAL_MS,
  CATCH_UP_COMMIT_MAX_RECORDS,
} from '../../runtime/streams/stream-runner.js';
import { TABLE_STREAMS, topicNames } from '../../schemas/topics.js';
import { startBenchStack } from './bench-stack.js';
import { findBrokerPid } from './proc-stats.js';
import { type ConsumerPerf, consumerPerfTest } from './process-perf.js';
import { summariseProfile } from './process-profile.js';
import {
  medianBy,
  medianRestore,
  type Report,
  type Restored,
  renderReport,
  routerOnlyJson,
  summaryJson,
  writeReport,
} from './process-report.js';
import {
  assertNothingDeadLettered,
  type Env,
  endOffsetSum,
  follow,
  killWorker,
  load1,
  log,
  openBenchAdmin,
  type Progress,
  prefill,
  rawProgress,
  spawnWorker,
  transactionalProgress,
  type Worker,
} from './process-run.js';
import { scaleOut } from './process-scale.js';
import { compareStateStores } from './process-state.js';

const { values: opts } = parseArgs({
  options: {
    // Defaults 200,000 and 20,000; with --scale-out 60,000 and 6,000 (two raw topics, three router runs).
    ids: { type: 'string' },
    retries: { type: 'string' },
    partitions: { type: 'string', default: '6' },
    'memory-ids': { type: 'string', default: '1000000' },
    /** Ids of the separate profiled router pass (retries: a tenth of them); 0 skips it. */
    'profile-ids': { type: 'string', default: '40000' },
    /** Records per transaction of the second pass-through (the first has the runtime's 1,000 / 100 ms); 0 skips it. */
    'big-transactions': { type: 'string', default: '10000' },
    /** Keeps the router's .cpuprofile at this path (for DevTools or a closer look). */
    'profile-out': { type: 'string' },
    'broker-pid': { type: 'string' },
    'no-write': { type: 'boolean', default: false },
    /** Also prints the headline figures as one JSON object, the last line on stdout (process-report.ts summaryJson). */
    json: { type: 'boolean', default: false },
    /** Restores of the dedupe changelog, each in a new worker; the median counts. */
    'restore-runs': { type: 'string', default: '3' },
    /**
     * Runs of Kafka's JVM consumer perf test, the restore's yardstick; the median counts. One run moved
     * between 239,000 and 533,000 records/s on a quiet machine (a new JVM each time, still compiling).
     */
    'jvm-runs': { type: 'string', default: '3' },
    /** One more restore under `node --cpu-prof`, its .cpuprofile kept at this path (its top functions logged). */
    'restore-profile-out': { type: 'string' },
    'keep-topics': { type: 'boolean', default: false },
    /**
     * Only the pass-through and the router (no JVM consumer, tables, restore, heap or profile), their
     * figures as one JSON line on stdout; docs/benchmarks.md is not written. For comparing hot-path steps.
     */
    'router-only': { type: 'boolean', default: false },
    /**
     * As --router-only, then the tables stage over the entity streams the router wrote: the tables beside
     * the same run's pass-through (tablesVsPassThrough in the JSON line).
     */
    'tables-only': { type: 'boolean', default: false },
    /** Only the router with 1 and 2 instances (process-scale.ts), into its own section. */
    'scale-out': { type: 'boolean', default: false },
    // With --scale-out: also one `process --threads N` (N stream threads in one command).
    threads: { type: 'string' },
    /** Only the router with its state in memory against on disk (process-state.ts), alternately, printed. */
    'state-store': { type: 'boolean', default: false },
    /** --state-store: runs of each. */
    rounds: { type: 'string', default: '2' },
    /** --state-store: each router worker under `node --cpu-prof`, its profile in <dir>/<round>-<state>/. */
    'state-profile-dir': { type: 'string' },
  },
});

function heapPerTrackedId(count: number): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) return Number.NaN;
  const used = () => {
    gc();
    gc();
    const m = process.memoryUsage();
    return m.heapUsed + m.arrayBuffers;
  };
  const before = used();
  // Restored as a new owner would: changelog records into the store.
  const store = new DedupeStore(7 * 86_400_000);
  const now = Date.now();
  const value = encodeDedupeDecision({ kind: 'routed', seenAt: now });
  for (let i = 0; i < count; i++) store.restore({ key: `source/wh_${i}`, value, timestamp: now });
  const after = used();
  if (store.size !== count) throw new Error('lost ids');
  return (after - before) / count;
}

/** Runs one worker until its group committed everything, then stops it: its steady window and its whole life. */
async function measureStage(
  env: Env,
  spawnIt: () => Worker,
  progressOf: () => Promise<() => Promise<Progress>>,
  current: { worker?: Worker },
) {
  const worker = spawnIt();
  current.worker = worker;
  const started = await worker.started;
  const window = await follow(env, worker, await progressOf());
  const stopped = await worker.stop();
  current.worker = undefined;
  return { window, lifeCpu: stopped.cpuSeconds - started };
}

async function main(): Promise<void> {
  const partitions = Number(opts.partitions);
  const scale = opts['scale-out'] ?? false;
  if (opts.threads !== undefined && (!scale || !/^[1-9]\d*$/.test(opts.threads)))
    throw new Error(
      `--threads takes a whole number of stream threads from 1, with --scale-out (got ${opts.threads})`,
    );
  // Scale-out: enough that a second instance gets its share before one instance, committing up to a
  // second's records at a time while it catches up, has read it all.
  const ids = Number(opts.ids ?? (scale ? 400_000 : 200_000));
  const retries = Number(opts.retries ?? (scale ? 40_000 : 20_000));
  // The broker's pid of a configured stack is found by its port (or given with --broker-pid).
  const bench = await startBenchStack({ jvmTools: true });
  const { brokers, registryUrl } = bench.stack;
  log(`stack: ${bench.stack.describe()}`);
  const settings = bench.kafka('bench-process', pino({ level: 'warn' }));
  const admin = openBenchAdmin(settings);
  const brokerPid = opts['broker-pid'] ? Number(opts['broker-pid']) : findBrokerPid(brokers[0]!);
  const env: Env = { bench, settings, admin, partitions, brokerPid };
  log(`broker pid ${brokerPid ?? 'not found (pass --broker-pid)'}`);
  if (opts['state-store']) {
    try {
      await compareStateStores(env, {
        ids,
        retries,
        rounds: Number(opts.rounds),
        ...(opts['state-profile-dir'] === undefined ? {} : { profileDir: opts['state-profile-dir'] }),
      });
    } finally {
      admin.close();
      await bench.stop();
    }
    return;
  }
  if (scale) {
    try {
      await scaleOut(bench, env, {
        ids,
        retries,
        write: !opts['no-write'],
        argv: process.argv.slice(2).filter((a) => a !== '--scale-out'),
        ...(opts.threads === undefined ? {} : { threads: Number(opts.threads) }),
      });
    } finally {
      admin.close();
      await bench.stop();
    }
    return;
  }
  const prefix = `bench-process-${randomBytes(3).toString('hex')}.`;
  const profilePrefix = `bench-process-${randomBytes(3).toString('hex')}.`;
  const names = topicNames(prefix);
  const current: { worker?: Worker } = {};
  const profileDir = mkdtempSync(join(tmpdir(), 'hookledger-bench-profile-'));
  const prefixes = [prefix];
  try {
    log(`producing ${ids} ids + ${retries} retries to ${names.raw} (${partitions} partitions)`);
    const loadStarted = performance.now();
    const { records: total, meanValueBytes } = await prefill(env, prefix, ids, retries);
    log(`${total} records in ${((performance.now() - loadStarted) / 1000).toFixed(1)} s`);

    const passThrough = async (
      group: string,
      cadence: { commitMaxRecords: number; commitIntervalMs: number },
      fanOut = false,
    ) => {
      const groupId = `${prefix}${group}`;
      const figures = await measureStage(
        env,
        () =>
          spawnWorker(env, prefix, {
            mode: 'passthrough',
            expected: total,
            topic: `${prefix}passthrough`,
            groupId,
            ...cadence,
            ...(fanOut ? { fanOut } : {}),
          }),
        async () => rawProgress(env, groupId, names.raw, total),
        current,
      );
      log(
        `pass-through${fanOut ? " (the router's writes)" : ''}: ${(figures.window.records / figures.window.seconds).toFixed(0)} records/s, ${(figures.window.records / figures.window.transactions).toFixed(0)} records/transaction`,
      );
      return figures;
    };
    // The router's writes (as many records, of its sizes, to as many topics) with nothing computed, at the
    // runtime's cadence while catching up (as the router commits in this bench): how much of the router's
    // cost is what it writes, not what it works out.
    const measureFanOut = () => {
      log("pass-through writing the router's records (fan-out)…");
      return passThrough(
        'bench-passthrough-fanout',
        { commitMaxRecords: CATCH_UP_COMMIT_MAX_RECORDS, commitIntervalMs: CATCH_UP_COMMIT_INTERVAL_MS },
        true,
      );
    };
    const routerOnly = opts['router-only'] ?? false;
    const tablesOnly = opts['tables-only'] ?? false;
    const measureTables = async () => {
      log('tables…');
      const tableTopics = TABLE_STREAMS.map((s) => names.entity(s));
      const endOffsets = await endOffsetSum(admin, tableTopics);
      const tables = await measureStage(
        env,
        () => spawnWorker(env, prefix, { mode: 'tables' }),
        () => transactionalProgress(env, tablesAppId(prefix), tableTopics),
        current,
      );
      log(`tables: ${(tables.window.records / tables.window.seconds).toFixed(0)} events/s`);
      return { ...tables, endOffsets };
    };
    if (routerOnly || tablesOnly) {
      const bare = await passThrough('bench-passthrough', {
        commitMaxRecords: 10_000,
        commitIntervalMs: 100,
      });
      const bareFanOut = await measureFanOut();
      log('dedupe-router…');
      const router = await measureStage(
        env,
        () => spawnWorker(env, prefix, { mode: 'router' }),
        async () => rawProgress(env, dedupeRouterAppId(prefix), names.raw, total),
        current,
      );
      log(`router: ${(router.window.records / router.window.seconds).toFixed(0)} events/s`);
      await assertNothingDeadLettered(admin, names.dlq);
      const tables = tablesOnly ? await measureTables() : undefined;
      console.log(
        JSON.stringify(
          routerOnlyJson({
            argv: process.argv.slice(2),
            total,
            partitions,
            router,
            bare,
            bareFanOut,
            ...(tables ? { tables } : {}),
          }),
        ),
      );
      return;
    }

    const perfLoad = load1();
    const perfRuns: ConsumerPerf[] = [];
    const jvmRuns = Math.max(1, Number(opts['jvm-runs']));
    for (let i = 0; i < jvmRuns; i++) {
      log(`kafka-consumer-perf-test (${i + 1} of ${jvmRuns})…`);
      const run = await consumerPerfTest({
        brokers,
        ...(bench.jvmClientConfig ? { clientConfig: bench.jvmClientConfig } : {}),
        topic: names.raw,
        messages: total,
        brokerPid,
      });
      log(`consumer perf test: ${run.fetchRecordsPerSec.toFixed(0)} records/s`);
      perfRuns.push(run);
    }
    const perf = medianBy(perfRuns, (run) => run.fetchRecordsPerSec);

    log("bare librdkafka exactly-once pass-through (the runtime's 10,000 records / 100 ms a transaction)…");
    const bare = await passThrough('bench-passthrough', { commitMaxRecords: 10_000, commitIntervalMs: 100 });
    const bigTransactions = Number(opts['big-transactions']);
    let bareBig: Report['bareBig'];
    if (bigTransactions > 0) {
      log(`bare librdkafka exactly-once pass-through (${bigTransactions} records a transaction)…`);
      // The interval only bounds a slow transaction, well inside its 10 s timeout.
      bareBig = await passThrough('bench-passthrough-big', {
        commitMaxRecords: bigTransactions,
        commitIntervalMs: 3_000,
      });
    }

    const bareFanOut = await measureFanOut();

    log('dedupe-router…');
    const router = await measureStage(
      env,
      () => spawnWorker(env, prefix, { mode: 'router' }),
      async () => rawProgress(env, dedupeRouterAppId(prefix), names.raw, total),
      current,
    );
    log(`router: ${(router.window.records / router.window.seconds).toFixed(0)} events/s`);
    await assertNothingDeadLettered(admin, names.dlq);

    const tables = await measureTables();

    const restoreOnce = async (profile?: string) => {
      const load = load1();
      const worker = spawnWorker(
        env,
        prefix,
        { mode: 'restore', partitions },
        profile ? { profileDir: profile } : {},
      );
      current.worker = worker;
      await worker.started;
      const restored = await worker.next('restored');
      await worker.stop();
      current.worker = undefined;
      log(
        `restore: ${restored.records} records in ${restored.durationMs} ms = ${(restored.records / (restored.durationMs / 1000)).toFixed(0)}/s, first record after ${(restored.durationMs - restored.firstRecordMs).toFixed(0)} ms, CPU ${restored.cpuSeconds.toFixed(2)} s (load ${load.toFixed(1)})`,
      );
      return { ...restored, load1: load };
    };
    const restoreRuns: Restored[] = [];
    const runCount = Math.max(1, Number(opts['restore-runs']));
    for (let i = 0; i < runCount; i++) {
      log(`restore of the dedupe changelog (${i + 1} of ${runCount})…`);
      restoreRuns.push(await restoreOnce());
    }
    const restored = medianRestore(restoreRuns);
    if (opts['restore-profile-out']) {
      log('restore under the profiler…');
      const dir = mkdtempSync(join(tmpdir(), 'hookledger-bench-restore-profile-'));
      try {
        const run = await restoreOnce(dir);
        const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
        if (file) {
          copyFileSync(join(dir, file), opts['restore-profile-out']);
          const summary = summariseProfile(join(dir, file), run.hrFromUs, run.hrToUs, 25);
          log(
            `restore profile (${summary.busyMs.toFixed(0)} ms busy in the restore, windowed ${summary.windowed}), self time:`,
          );
          for (const f of summary.functions)
            log(`  ${f.ms.toFixed(0)} ms ${(100 * f.share).toFixed(1)} % ${f.name} ${f.where}`);
          log('inclusive:');
          for (const f of summary.ownInclusive)
            log(`  ${f.ms.toFixed(0)} ms ${(100 * f.share).toFixed(1)} % ${f.name} ${f.where}`);
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }

    log(`heap per tracked id at ${opts['memory-ids']} ids…`);
    const heap = heapPerTrackedId(Number(opts['memory-ids']));

    let profile: Report['profile'];
    const profileIds = Number(opts['profile-ids']);
    if (profileIds > 0) {
      prefixes.push(profilePrefix);
      log(`profiled router pass: ${profileIds} ids + ${Math.round(profileIds / 10)} retries…`);
      const { records: profiled } = await prefill(
        env,
        profilePrefix,
        profileIds,
        Math.round(profileIds / 10),
      );
      const run = await measureStage(
        env,
        () => spawnWorker(env, profilePrefix, { mode: 'router' }, { profileDir }),
        async () =>
          rawProgress(env, dedupeRouterAppId(profilePrefix), topicNames(profilePrefix).raw, profiled),
        current,
      );
      const file = readdirSync(profileDir).find((f) => f.endsWith('.cpuprofile'));
      if (file) {
        if (opts['profile-out']) copyFileSync(join(profileDir, file), opts['profile-out']);
        profile = {
          records: profiled,
          window: run.window,
          summary: summariseProfile(join(profileDir, file), run.window.hrFromUs, run.window.hrToUs),
        };
      }
    }

    const report: Report = {
      ids,
      retries,
      total,
      partitions,
      meanValueBytes,
      brokers,
      registryUrl,
      brokerPid,
      memoryIds: Number(opts['memory-ids']),
      perf: { ...perf, load1: perfLoad, runs: perfRuns.map((run) => run.fetchRecordsPerSec) },
      bare,
      ...(bareBig ? { bareBig } : {}),
      bareFanOut,
      router,
      tables,
      restore: restored,
      restoreRuns,
      heap,
      ...(profile ? { profile } : {}),
      // Where this run kept its profile is no part of how to reproduce it.
      argv: process.argv
        .slice(2)
        .filter(
          (a, i, all) =>
            !/^--(restore-)?profile-out/.test(a) && !/^--(restore-)?profile-out$/.test(all[i - 1] ?? ''),
        ),
    };
    const section = renderReport(report);
    console.log(section);
    if (!opts['no-write']) writeReport(section);
    // The last line on stdout, for dashboards and CI.
    if (opts.json) console.log(JSON.stringify(summaryJson(report)));
  } finally {
    killWorker(current.worker);
    rmSync(profileDir, { recursive: true, force: true });
    if (!opts['keep-topics']) {
      const all = await admin.listTopics().catch(() => [] as string[]);
      const ours = all.filter((t) => prefixes.some((p) => t.startsWith(p)));
      if (ours.length > 0) await admin.deleteTopics(ours).catch(() => undefined);
    }
    admin.close();
    await bench.stop();
  }
}

await main();
process.exit(0);
