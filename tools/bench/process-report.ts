// The Markdown section `npm run bench:process` prints and writes into docs/benchmarks.md, between the
// bench:process markers.
import { availableParallelism, cpus, totalmem } from 'node:os';
import { TABLE_STREAMS } from '../../schemas/topics.js';
import type { ConsumerPerf } from './process-perf.js';
import type { ProfileSummary } from './process-profile.js';
import type { Window } from './process-run.js';
import type { FromWorker } from './process-worker.js';
import { writeSection } from './report-section.js';

export interface StageFigures {
  window: Window;
  /** The worker's CPU from loading its modules to its exit: connect, join, restore, work, close. */
  lifeCpu: number;
}

export type Restored = Extract<FromWorker, { type: 'restored' }> & { load1: number };

export interface Report {
  ids: number;
  retries: number;
  total: number;
  partitions: number;
  meanValueBytes: number;
  brokers: string[];
  registryUrl: string;
  brokerPid: number | undefined;
  memoryIds: number;
  /** The median of the JVM consumer's runs (`runs`: each one's records/s over its fetch time). */
  perf: ConsumerPerf & { load1: number; runs?: number[] };
  /** The floor: the runtime's transaction cadence (10,000 records / 100 ms). */
  bare: StageFigures;
  /** The same with big transactions (≥ 10k records each), when measured. */
  bareBig?: StageFigures;
  /** The pass-through writing the router's records per record read (process-passthrough.ts fanOutOf). */
  bareFanOut?: StageFigures;
  router: StageFigures;
  tables: StageFigures & { endOffsets: number };
  /** The median restore (by records/s) of `restoreRuns`. */
  restore: Restored;
  /** Every restore of the run, in order (a new worker each time, the same changelog). */
  restoreRuns?: Restored[];
  heap: number;
  profile?: { records: number; window: Window; summary: ProfileSummary };
  argv: string[];
}

const fmt = (n: number | undefined, digits = 0) =>
  n === undefined || Number.isNaN(n) ? 'n/a' : n.toFixed(digits);
const int = (n: number) => Math.round(n).toLocaleString('en-US');
const perRecord = (seconds: number | undefined, records: number) =>
  seconds === undefined ? undefined : (seconds / records) * 1e6;
const rate = (w: Window) => w.records / w.seconds;
const restoreRateOf = (x: Restored) => x.records / (x.durationMs / 1000);
const verdict = (ok: boolean) => `**${ok ? 'met' : 'not met'}**`;

/** The project's targets (issue #10: "Benchmarks"), judged on this run's figures. */
export const TARGETS = {
  routerEventsPerSec: 25_000,
  routerCpuVsFloor: 3,
  tablesEventsPerSec: 50_000,
  restoreRecordsPerSec: 300_000,
  /** Issue #20: restore against the JVM consumer's fetch rate measured in the same run. */
  restoreVsJvmConsumer: 0.6,
  heapBytesPerId: 64,
} as const;

function stageRow(name: string, s: StageFigures, notes: string): string {
  const w = s.window;
  const perTx = w.transactions > 0 ? fmt(w.records / w.transactions) : 'n/a';
  const waiting = fmt((100 * w.commitSeconds) / w.seconds);
  return `| ${name} | ${int(w.records)} | ${fmt(rate(w))} | ${fmt(perRecord(w.workerCpu, w.records), 1)} | ${fmt(perRecord(s.lifeCpu, w.totalRecords), 1)} | ${fmt(perRecord(w.brokerCpu, w.records), 1)} | ${perTx} | ${waiting} % | ${notes} |`;
}

function shareRow(
  name: string,
  seconds: number,
  busy: number,
  own: number,
  broker: number | undefined,
  load: number,
) {
  const rest = busy - own - (broker ?? 0);
  return `| ${name} | ${fmt(seconds, 1)} | ${fmt(busy / seconds, 2)} | ${fmt(own / seconds, 2)} | ${fmt(broker === undefined ? undefined : broker / seconds, 2)} | ${fmt(rest / seconds, 2)} | ${fmt(load, 1)} |`;
}

/** shareRow for a worker's steady window. */
const windowShareRow = (name: string, w: Window) =>
  shareRow(name, w.seconds, w.machineBusy, w.workerCpu, w.brokerCpu, w.load1);

export function renderReport(r: Report): string {
  const cores = availableParallelism();
  const cpu = cpus()[0]?.model.trim() ?? 'unknown CPU';
  const routerCpu = perRecord(r.router.window.workerCpu, r.router.window.records)!;
  const bareCpu = perRecord(r.bare.window.workerCpu, r.bare.window.records)!;
  const routerRate = rate(r.router.window);
  const tablesRate = rate(r.tables.window);
  const ratio = routerCpu / bareCpu;
  const restoreRate = restoreRateOf(r.restore);
  const runs = r.restoreRuns ?? [r.restore];
  const restoreFromFirst = r.restore.records / (r.restore.firstRecordMs / 1000);
  const bigCpu = r.bareBig ? perRecord(r.bareBig.window.workerCpu, r.bareBig.window.records)! : undefined;
  const fanOutCpu = r.bareFanOut
    ? perRecord(r.bareFanOut.window.workerCpu, r.bareFanOut.window.records)!
    : undefined;
  const t = TARGETS;
  const argv = reproducibleArgv(r.argv);
  const args = argv.length > 0 ? ` -- ${argv.join(' ')}` : '';
  const command = `npm run bench:process${args}`;
  const duplicates = (100 * r.retries) / r.total;
  const p = r.profile;
  const lines = [
    '## Processors',
    '',
    `Reproduce: \`${command}\` (with \`KAFKA_BROKERS\` and \`SCHEMA_REGISTRY_URL\` set it uses that stack, else it starts the local one).`,
    `(defaults \`--ids 200000 --retries 20000 --partitions 6 --memory-ids 1000000 --profile-ids 40000 --big-transactions 10000 --restore-runs 3 --jvm-runs 3\`; a quick run: \`-- --ids 20000 --retries 2000 --memory-ids 100000 --profile-ids 10000 --no-write\`).`,
    `Measured ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC on ${cores} × ${cpu} (nproc ${cores}), ${(totalmem() / 2 ** 30).toFixed(1)} GiB RAM, Node ${process.version};`,
    `single-broker stack at ${r.brokers.join(',')} (Kafka JVM pid ${r.brokerPid ?? 'not found'}), registry ${r.registryUrl}. Every Kafka client is librdkafka`,
    "(`@confluentinc/kafka-javascript`, native API). Other engineers' tests share this machine: the 1-minute load average before each part is in",
    '"How the cores were shared" below.',
    '',
    `Load: one raw topic pre-filled before anything is measured: ${int(r.total)} deliveries = ${int(r.ids)} webhook ids + ${int(r.retries)} retries`,
    `(${fmt(duplicates, 1)} % of the deliveries are duplicates; half byte-identical, half re-serialized; shuffled), six entity kinds, mean Avro value ${fmt(r.meanValueBytes)} B,`,
    `${r.partitions} partitions, replication factor 1. Every part reads that same topic (tables: the entity streams the router just wrote) and runs in`,
    'its own Node process. The stages run on the exactly-once runtime (runtime/streams/stream-runner.ts: one read_committed consumer and one',
    'transactional producer per instance, a transaction every 100 ms or 10,000 records); the pass-through does the same with nothing in between.',
    `"Steady" figures cover the first commit seen to the last one (the group's committed offsets polled every 50 ms), so process start, connect,`,
    `group join and restore are outside them; "incl. start-up" is the worker's whole CPU (modules loaded → exit) over all its records. CPU is`,
    `user + system from \`/proc/<pid>/stat\`, the broker's from its JVM. "Commit wait" is the share of the window the poll loop spent committing`,
    '(changelog sends, sendOffsetsToTransaction, commitTransaction), processing nothing meanwhile.',
    '',
    '### Summary',
    '',
    '| | records | records/s | process CPU µs/record (steady) | incl. start-up | broker CPU µs/record | records/transaction | commit wait | notes |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---|',
    `| Kafka \`kafka-consumer-perf-test\` (reads only) | ${int(r.perf.records)} | ${fmt(r.perf.fetchRecordsPerSec)} | | ${fmt(perRecord(r.perf.toolCpu, r.perf.records), 1)} | ${fmt(perRecord(r.perf.brokerCpu, r.perf.records), 1)} | | | JVM consumer, read_uncommitted; records/s over fetch time, the median of ${r.perf.runs?.length ?? 1} run(s)${r.perf.runs && r.perf.runs.length > 1 ? ` (${r.perf.runs.map((x) => fmt(x)).join(', ')})` : ''} (${fmt(r.perf.recordsPerSec)}/s with its group join); CPU includes JVM start-up |`,
    stageRow(
      'bare librdkafka exactly-once pass-through: **the floor**',
      r.bare,
      "consume up to 500 → produce byte copies to the same partition → sendOffsetsToTransaction(offsets, consumer) → commitTransaction, at the runtime's 10,000 records / 100 ms",
    ),
    ...(r.bareBig
      ? [
          stageRow(
            'same, big transactions',
            r.bareBig,
            'the same with ≥ 10k records a transaction: what is left without the per-transaction cost',
          ),
        ]
      : []),
    ...(r.bareFanOut
      ? [
          stageRow(
            "same, writing the router's records",
            r.bareFanOut,
            "per record read, the records the router writes for it, in their sizes and topics, cut from the record's bytes (a copy to a unique topic, a 225 B or whole entity record to one of six, a commission for every sixth, a changelog record; nothing for every 11th, as for a retry): the router's writes with nothing computed",
          ),
        ]
      : []),
    stageRow(
      '**dedupe-router** (exactly-once)',
      r.router,
      `Avro decode, parse + validate, dedupe, route, Avro outputs + changelog + offsets per transaction; first commit ${fmt(r.router.window.startupSeconds, 1)} s after spawn; peak RSS ${fmt(r.router.window.peakRssMiB)} MiB`,
    ),
    stageRow(
      '**tables** (exactly-once)',
      r.tables,
      `the router's ${TABLE_STREAMS.length} table streams (${int(r.tables.endOffsets)} offsets incl. transaction markers); field-level merge, \`.latest\` + merge changelog; peak RSS ${fmt(r.tables.window.peakRssMiB)} MiB`,
    ),
    `| dedupe changelog restore | ${int(r.restore.records)} | ${fmt(restoreRate)} | ${fmt(perRecord(r.restore.cpuSeconds, r.restore.records), 1)} | | | | | the runtime's restoreTasks() (runtime/streams/restore.ts → read-to-end.ts: one group-less read_committed reader) into the router's ${r.partitions} tasks' DedupeStores, as a new owner of every partition${runs.length > 1 ? ` (the median of ${runs.length} restores, each a new process)` : ''}: ${fmt(r.restore.durationMs / 1000, 2)} s from the reader's connect to the end (${fmt(restoreFromFirst)}/s from the first record); ${int(r.restore.ids)} ids held after |`,
    '',
    '### Targets (issue #10, from this run)',
    '',
    `- dedupe-router ≥ ${int(t.routerEventsPerSec)} events/s (exactly-once, steady): ${fmt(routerRate)} events/s: ${verdict(routerRate >= t.routerEventsPerSec)}.`,
    `- dedupe-router CPU per event ≤ ${t.routerCpuVsFloor}× the floor's: ${fmt(routerCpu, 1)} / ${fmt(bareCpu, 1)} µs = ${fmt(ratio, 2)}×: ${verdict(ratio <= t.routerCpuVsFloor)}` +
      ` (router work beyond the floor: ${fmt(routerCpu - bareCpu, 1)} µs/event${bigCpu === undefined ? '' : `; against the big-transaction pass-through's ${fmt(bigCpu, 1)} µs: ${fmt(routerCpu / bigCpu, 2)}×`}${fanOutCpu === undefined ? '' : `; writing the router's records alone costs ${fmt(fanOutCpu, 1)} µs a record read (${fmt(fanOutCpu / bareCpu, 2)}× the floor), so the router's own work is ${fmt(routerCpu - fanOutCpu, 1)} µs/event`}).`,
    `- tables ≥ ${int(t.tablesEventsPerSec)} events/s (exactly-once, steady): ${fmt(tablesRate)} events/s: ${verdict(tablesRate >= t.tablesEventsPerSec)}.`,
    `- changelog restore ≥ ${int(t.restoreRecordsPerSec)} records/s: ${fmt(restoreRate)} records/s over the whole restore (the reader's connect and watermark look-ups included): ${verdict(restoreRate >= t.restoreRecordsPerSec)}` +
      ` (${fmt(restoreFromFirst)}/s from the first record, ${restoreFromFirst >= t.restoreRecordsPerSec ? 'above' : 'below'} the target).`,
    `- changelog restore ≥ ${t.restoreVsJvmConsumer}× the JVM consumer's read rate in the same run (issue #20): ${fmt(restoreRate)} / ${fmt(r.perf.fetchRecordsPerSec)} = ${fmt(restoreRate / r.perf.fetchRecordsPerSec, 2)}×: ${verdict(restoreRate >= t.restoreVsJvmConsumer * r.perf.fetchRecordsPerSec)}` +
      `${runs.length > 1 ? ` (median of ${runs.length} restores: ${runs.map((x) => fmt(restoreRateOf(x))).join(', ')} records/s)` : ''}.`,
    `- Heap per tracked id at ${int(r.memoryIds)} ids (restored into a DedupeStore, heap + array buffers after GC): ${fmt(r.heap, 1)} bytes (≤ ${t.heapBytesPerId}): ${verdict(r.heap <= t.heapBytesPerId)}.`,
    `- Throughput beside the floor: pass-through ${fmt(rate(r.bare.window))}/s${r.bareBig ? ` (${fmt(rate(r.bareBig.window))}/s with big transactions)` : ''}${r.bareFanOut ? `, writing the router's records ${fmt(rate(r.bareFanOut.window))}/s` : ''}, router ${fmt(routerRate)}/s (${fmt((100 * routerRate) / rate(r.bare.window))} %), tables ${fmt(tablesRate)}/s; the JVM reader ${fmt(r.perf.fetchRecordsPerSec)}/s.`,
    '  For scale (issue #10, measured here on 2026-11-23): the same dedupe-and-route work as a Kafka Streams 3.9 app (exactly_once_v2) did 20–32k events/s at 53–80 µs CPU per event.',
    '',
    `### How the ${cores} cores were shared`,
    '',
    `Nothing was pinned: the part's process, the broker, the registry, this driver and other users' work (tests run on the same machine) all`,
    `shared the ${cores} cores. Per part, over its window: cores busy machine-wide (\`/proc/stat\`), the part's own process, the broker, and the rest`,
    '(this driver polling offsets, the registry, anything else running).',
    '',
    '| part | window s | cores busy | part | broker | rest | 1-min load before |',
    '|---|---:|---:|---:|---:|---:|---:|',
    shareRow(
      'consumer perf test (whole tool run)',
      r.perf.wallSeconds,
      r.perf.machineBusy,
      r.perf.toolCpu,
      r.perf.brokerCpu,
      r.perf.load1,
    ),
    windowShareRow('pass-through', r.bare.window),
    ...(r.bareBig ? [windowShareRow('pass-through, big transactions', r.bareBig.window)] : []),
    ...(r.bareFanOut ? [windowShareRow("pass-through, the router's records", r.bareFanOut.window)] : []),
    windowShareRow('dedupe-router', r.router.window),
    windowShareRow('tables', r.tables.window),
    `| changelog restore (whole restore) | ${fmt(r.restore.durationMs / 1000, 2)} | | | | | ${fmt(r.restore.load1, 1)} |`,
    '',
  ];
  if (p) {
    const w = p.window;
    lines.push(
      "### Where the router's time goes",
      '',
      `A separate pass with \`node --cpu-prof\` (so the figures above carry no profiler): a fresh raw topic of ${int(p.records)} deliveries, same shape,`,
      `${fmt(rate(w))} events/s and ${fmt(perRecord(w.workerCpu, w.records), 1)} µs CPU/event with the profiler on. Self time of the samples in its steady window`,
      `(${fmt(p.summary.busyMs)} ms busy${p.summary.windowed ? '' : '; the window did not map onto the profile, so the whole profile'}), idle left out.`,
      `V8 samples only the JavaScript thread: of the process's ${fmt(w.workerCpu * 1000)} ms CPU in that window, the other ${fmt(Math.max(0, w.workerCpu * 1000 - p.summary.busyMs))} ms`,
      "went to librdkafka's own threads (fetching, batching, the network, transactions) and V8's helper threads. The binding's work on the",
      'JavaScript thread shows as its lib/*.js functions (a native call counts as the JavaScript function that made it) and as `(program)`.',
      '',
      'Busy time by phase (a sample counts in the first phase its call stack matches, in this order):',
      '',
      '| phase | ms | share |',
      '|---|---:|---:|',
      ...p.summary.phases.map((g) => `| ${g.name} | ${fmt(g.ms)} | ${fmt(100 * g.share, 1)} % |`),
      '',
      'Top functions by self time:',
      '',
      '| function | where | self ms | share |',
      '|---|---|---:|---:|',
      ...p.summary.functions.map(
        (f) =>
          `| \`${f.name}\` | ${f.where ? `\`${f.where}\`` : ''} | ${fmt(f.ms)} | ${fmt(100 * f.share, 1)} % |`,
      ),
      '',
      'Self time by package:',
      '',
      '| package / folder | self ms | share |',
      '|---|---:|---:|',
      ...p.summary.packages.map((g) => `| ${g.name} | ${fmt(g.ms)} | ${fmt(100 * g.share, 1)} % |`),
      '',
      "The project's own functions by inclusive time (themselves and everything they call; nested, so shares overlap):",
      '',
      '| function | where | inclusive ms | share |',
      '|---|---|---:|---:|',
      ...p.summary.ownInclusive.map(
        (f) => `| \`${f.name}\` | \`${f.where}\` | ${fmt(f.ms)} | ${fmt(100 * f.share, 1)} % |`,
      ),
      '',
    );
  }
  return lines.join('\n').trimEnd();
}

/** The arguments of a run as a reader can repeat them: without `--broker-pid`, a pid of this machine's. */
export function reproducibleArgv(argv: readonly string[]): string[] {
  const kept: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--broker-pid') i++;
    else if (!argv[i]!.startsWith('--broker-pid=')) kept.push(argv[i]!);
  }
  return kept;
}

/** The run whose figure is the median (the upper one of an even count). */
export function medianBy<T>(runs: readonly T[], figure: (run: T) => number): T {
  const sorted = [...runs].sort((a, b) => figure(a) - figure(b));
  return sorted[Math.floor(sorted.length / 2)]!;
}

/** The median of the restores by records/s (the upper one of an even count). */
export function medianRestore(runs: readonly Restored[]): Restored {
  return medianBy(runs, restoreRateOf);
}

/**
 * `--router-only`: the router beside the pass-through of the same run, nothing after them (the smallest
 * run that compares hot-path work). Same definitions as summaryJson's.
 */
export function routerOnlyJson(
  r: Pick<Report, 'argv' | 'total' | 'partitions' | 'router' | 'bare' | 'bareFanOut'> & {
    tables?: StageFigures;
  },
) {
  const num = (n: number | undefined) => (n === undefined || !Number.isFinite(n) ? null : n);
  const stage = (s: StageFigures) => ({
    rate: num(rate(s.window)),
    cpu: num(perRecord(s.window.workerCpu, s.window.records)),
    // Where the rest of the window went: the loop waits while a transaction commits.
    recordsPerTransaction: num(s.window.records / s.window.transactions),
    committingShare: num(s.window.commitSeconds / s.window.seconds),
    cpuShare: num(s.window.workerCpu / s.window.seconds),
    // On a machine the broker shares, its CPU per record bounds the rate as much as the stage's own.
    brokerCpuMicrosPerRecord: num(perRecord(s.window.brokerCpu, s.window.records)),
    peakRssMiB: num(s.window.peakRssMiB),
  });
  const router = stage(r.router);
  const bare = stage(r.bare);
  const { rate: routerRate, cpu: routerCpu, ...routerRest } = router;
  const { rate: bareRate, cpu: bareCpu, ...bareRest } = bare;
  return {
    measuredAt: new Date().toISOString(),
    argv: r.argv,
    records: r.total,
    partitions: r.partitions,
    router: { eventsPerSecond: routerRate, cpuMicrosPerEvent: routerCpu, ...routerRest },
    passThrough: { recordsPerSecond: bareRate, cpuMicrosPerRecord: bareCpu, ...bareRest },
    routerVsPassThrough: num((router.rate ?? Number.NaN) / (bare.rate ?? Number.NaN)),
    routerCpuVsPassThrough: num((router.cpu ?? Number.NaN) / (bare.cpu ?? Number.NaN)),
    ...fanOutJson(r.bareFanOut, router, num),
    load1: {
      passThrough: r.bare.window.load1,
      router: r.router.window.load1,
      ...(r.bareFanOut ? { passThroughFanOut: r.bareFanOut.window.load1 } : {}),
      ...(r.tables ? { tables: r.tables.window.load1 } : {}),
    },
    // --tables-only: the tables stage beside the same run's pass-through (issue #20: ≥ 0.75×).
    ...(r.tables ? tablesJson(r.tables, bare, num) : {}),
  };
}

/** A stage's records/s and CPU µs per record over its steady window (null where not finite). */
function rateAndCpu(figures: StageFigures, num: (n: number | undefined) => number | null) {
  return {
    rate: num(rate(figures.window)),
    cpu: num(perRecord(figures.window.workerCpu, figures.window.records)),
  };
}

/** The pass-through writing the router's records, and the router beside it (absent when not measured). */
function fanOutJson(
  figures: StageFigures | undefined,
  router: { rate: number | null; cpu: number | null },
  num: (n: number | undefined) => number | null,
) {
  if (figures === undefined) return {};
  const fanOut = rateAndCpu(figures, num);
  return {
    passThroughFanOut: {
      recordsPerSecond: fanOut.rate,
      cpuMicrosPerRecord: fanOut.cpu,
      brokerCpuMicrosPerRecord: num(perRecord(figures.window.brokerCpu, figures.window.records)),
    },
    routerVsFanOut: num((router.rate ?? Number.NaN) / (fanOut.rate ?? Number.NaN)),
    routerCpuVsFanOut: num((router.cpu ?? Number.NaN) / (fanOut.cpu ?? Number.NaN)),
  };
}

function tablesJson(
  figures: StageFigures,
  bare: { rate: number | null; cpu: number | null },
  num: (n: number | undefined) => number | null,
) {
  const { rate: rateOf, cpu } = rateAndCpu(figures, num);
  return {
    tables: {
      eventsPerSecond: rateOf,
      cpuMicrosPerEvent: cpu,
      recordsPerTransaction: num(figures.window.records / figures.window.transactions),
      committingShare: num(figures.window.commitSeconds / figures.window.seconds),
      cpuShare: num(figures.window.workerCpu / figures.window.seconds),
      peakRssMiB: num(figures.window.peakRssMiB),
    },
    tablesVsPassThrough: num((rateOf ?? Number.NaN) / (bare.rate ?? Number.NaN)),
    tablesCpuVsPassThrough: num((cpu ?? Number.NaN) / (bare.cpu ?? Number.NaN)),
  };
}

/**
 * The run's headline figures as one JSON object (`npm run bench:process -- --json` prints it as its last
 * stdout line, for dashboards and CI). Rates are per second over each part's steady window, CPU is the
 * part's own process; a figure not measured is null.
 */
export function summaryJson(r: Report) {
  const num = (n: number | undefined) => (n === undefined || !Number.isFinite(n) ? null : n);
  const stage = (s: StageFigures) => ({
    rate: num(rate(s.window)),
    cpu: num(perRecord(s.window.workerCpu, s.window.records)),
  });
  const router = stage(r.router);
  const bare = stage(r.bare);
  const tables = stage(r.tables);
  const restoreRate = restoreRateOf(r.restore);
  return {
    measuredAt: new Date().toISOString(),
    argv: r.argv,
    records: r.total,
    partitions: r.partitions,
    router: { eventsPerSecond: router.rate, cpuMicrosPerEvent: router.cpu },
    passThrough: { recordsPerSecond: bare.rate, cpuMicrosPerRecord: bare.cpu },
    ...(r.bareBig
      ? {
          passThroughBigTransactions: {
            recordsPerSecond: stage(r.bareBig).rate,
            cpuMicrosPerRecord: stage(r.bareBig).cpu,
          },
        }
      : {}),
    tables: { eventsPerSecond: tables.rate, cpuMicrosPerEvent: tables.cpu },
    restore: {
      recordsPerSecond: num(restoreRate),
      recordsPerSecondFromFirstRecord: num(r.restore.records / (r.restore.firstRecordMs / 1000)),
      cpuMicrosPerRecord: num(perRecord(r.restore.cpuSeconds, r.restore.records)),
      records: r.restore.records,
      vsJvmConsumer: num(restoreRate / r.perf.fetchRecordsPerSec),
      runs: (r.restoreRuns ?? [r.restore]).map((x) => num(restoreRateOf(x))),
    },
    jvmConsumer: {
      recordsPerSecond: num(r.perf.fetchRecordsPerSec),
      runs: (r.perf.runs ?? [r.perf.fetchRecordsPerSec]).map(num),
    },
    heapBytesPerId: num(r.heap),
    routerVsPassThrough: num((router.rate ?? Number.NaN) / (bare.rate ?? Number.NaN)),
    tablesVsPassThrough: num((tables.rate ?? Number.NaN) / (bare.rate ?? Number.NaN)),
    routerCpuVsPassThrough: num((router.cpu ?? Number.NaN) / (bare.cpu ?? Number.NaN)),
    ...fanOutJson(r.bareFanOut, router, num),
    load1: {
      jvmConsumer: r.perf.load1,
      passThrough: r.bare.window.load1,
      ...(r.bareFanOut ? { passThroughFanOut: r.bareFanOut.window.load1 } : {}),
      router: r.router.window.load1,
      tables: r.tables.window.load1,
      restore: r.restore.load1,
    },
  };
}

/** Into docs/benchmarks.md, between the bench:process markers. */
export function writeReport(section: string): void {
  writeSection('process', section);
}
