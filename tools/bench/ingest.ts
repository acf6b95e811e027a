// `npm run bench:ingest`: signed 2 KB deliveries at rising offered rates (open loop) against ingest, beside
// a bare Fastify route (the HTTP ceiling) and Kafka's producer perf test (acks=all, same record size).
// Writes the figures into docs/benchmarks.md (the ingest section) with the command that reproduces them.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { withAdmin } from '../../runtime/kafka/admin.js';
import { ensureTopics } from '../../runtime/kafka/ensure-topics.js';
import { topicNames } from '../../schemas/topics.js';
import { type BenchStack, startBenchStack } from './bench-stack.js';
import { benchTopicCatalog } from './bench-topics.js';
import {
  freePort,
  kafkaToolOutput,
  killedWithUs,
  ROOT,
  spawnHookledger,
  stopChild,
  waitReady,
} from './children.js';
import { type Delivery, type LoadResult, runStep, signedDelivery } from './ingest-load.js';
import { pidListeningOn, processCpuSeconds, rssMiB, treeCpuSeconds, treeRssMiB } from './proc-stats.js';
import { writeSection } from './report-section.js';

const COMMAND = 'npm run bench:ingest';
const KEY = 'bench-shared-key-0123456789abcdef0123456789';
const RECORD_SIZE = 2_048;

const { values: opts } = parseArgs({
  options: {
    // Up to 64,000/s: the bare route kept 32,000/s (the old top) here once the load generator stopped
    // costing more than the route, and its ceiling must be found, not assumed (issue #20's ingest target
    // is a ratio to it). Each target leaves the ramp at its first miss.
    rates: {
      type: 'string',
      default:
        '250,500,1000,1500,2000,3000,4000,6000,8000,10000,12000,16000,20000,24000,32000,40000,48000,64000',
    },
    'step-seconds': { type: 'string', default: '8' },
    'perf-records': { type: 'string', default: '100000' },
    'no-write': { type: 'boolean', default: false },
    'log-level': { type: 'string', default: 'info' },
    // A directory: ingest runs under `node --cpu-prof` and writes its profile there when it stops.
    'profile-dir': { type: 'string' },
    // Node flags for ingest's process only, given with "=" (--ingest-node-flags="--trace-gc --max-semi-space-size=64"); not with --profile-dir.
    'ingest-node-flags': { type: 'string', default: '' },
    // HTTP workers of ingest (`hookledger ingest --workers N`); its CPU and memory are its processes' sum.
    'ingest-workers': { type: 'string', default: '1' },
    // Keeps the run's directory (ingest's log, with --trace-gc its GC lines) and prints its path.
    'keep-dir': { type: 'boolean', default: false },
  },
});
const RATES = opts.rates.split(',').map(Number);
const STEP_S = Number(opts['step-seconds']);
const WORKERS = Number(opts['ingest-workers']);
if (!Number.isInteger(WORKERS) || WORKERS < 1)
  throw new Error(`--ingest-workers: expected a whole number from 1`);
/** A step whose median answer took longer than this was queueing, not kept up with (see saturated()). */
const MAX_KEPT_P50_MS = 100;
const log = (message: string) => console.error(`bench:ingest ${message}`);

// ---- process measurements --------------------------------------------------------------------------

const scrape = async (port: number) => (await fetch(`http://127.0.0.1:${port}/metrics`)).text();

// ---- the load --------------------------------------------------------------------------------------

/** Distinct signed JSON deliveries of exactly RECORD_SIZE bytes each, shaped like the platform's. */
function deliveries(count: number): Delivery[] {
  return Array.from({ length: count }, (_, n) => {
    const frame = (pad: string) =>
      JSON.stringify({
        webhook: { id: `wh_bench_${n}`, trigger: 'EnergySwitchUpdated', date: '2026-11-20T10:15:30.123Z' },
        query: { api: 'https://api.platform.example/v1/graphql', variables: { id: `es_${n}` } },
        data: { getEnergySwitch: { __typename: 'EnergySwitch', id: `es_${n}`, pad } },
      });
    const body = Buffer.from(frame('x'.repeat(RECORD_SIZE - Buffer.byteLength(frame('')))));
    return signedDelivery('/webhooks/bench', body, KEY);
  });
}

interface StepFigures extends LoadResult {
  cpuUsPerRequest?: number;
  brokerCpuUsPerRequest?: number;
  rssMiB?: number;
}

interface Target {
  name: string;
  port: number;
  pid: number | undefined;
  steps: StepFigures[];
  done: boolean;
}

/**
 * Rising offered rates, each target in turn at each rate, so both see the same machine (it is shared
 * and its load moves). A target leaves the ramp at its first saturated step; a step that looks saturated
 * is run once more first, so a neighbour's burst does not end the ramp.
 */
async function rampTogether(
  targets: Target[],
  load: Delivery[],
  brokerPid: number | undefined,
): Promise<void> {
  for (const target of targets) {
    await runStep({ host: '127.0.0.1', port: target.port }, load, { offeredRate: 200, durationS: 3 });
  }
  for (const rate of RATES) {
    for (const target of targets.filter((t) => !t.done)) {
      const pids = { target: target.pid, broker: brokerPid };
      let figures = await measuredStep(target.port, load, rate, pids);
      if (saturated(figures)) {
        log(`${target.name} offered ${rate}/s: ${describe(figures)}; once more`);
        await pause(10_000);
        const again = await measuredStep(target.port, load, rate, pids);
        if (again.throughput > figures.throughput || !saturated(again)) figures = again;
      }
      target.steps.push(figures);
      log(`${target.name} offered ${rate}/s: ${describe(figures)}`);
      if (saturated(figures)) {
        target.done = true;
        await pause(10_000);
      }
      await pause(1_000);
    }
    if (targets.every((t) => t.done)) break;
  }
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function measuredStep(
  port: number,
  load: Delivery[],
  rate: number,
  pids: { target?: number; broker?: number },
): Promise<StepFigures> {
  const cpu0 = treeCpuSeconds(pids.target);
  const broker0 = processCpuSeconds(pids.broker);
  const result = await runStep({ host: '127.0.0.1', port }, load, { offeredRate: rate, durationS: STEP_S });
  const cpu1 = treeCpuSeconds(pids.target);
  const broker1 = processCpuSeconds(pids.broker);
  const perRequest = (a?: number, b?: number) =>
    a !== undefined && b !== undefined && result.ok > 0 ? ((b - a) / result.ok) * 1e6 : undefined;
  return {
    ...result,
    cpuUsPerRequest: perRequest(cpu0, cpu1),
    brokerCpuUsPerRequest: perRequest(broker0, broker1),
    rssMiB: treeRssMiB(pids.target),
  };
}

/**
 * A step the target did not keep. A median over 100 ms counts too: the answers still came, but behind a
 * queue that grew through the step (an unloaded request takes a few milliseconds), which is not a rate
 * kept up with.
 */
function saturated(r: LoadResult): boolean {
  const failed = r.sent - r.ok + r.skipped;
  return (
    r.throughput < 0.9 * r.offeredRate ||
    failed > 0.01 * (r.sent + r.skipped) ||
    r.p99Ms > 1_000 ||
    r.p50Ms > MAX_KEPT_P50_MS
  );
}

/** The best throughput of a step the target kept up with (see saturated()). */
function maxThroughput(steps: StepFigures[]): number {
  return Math.max(0, ...steps.filter((r) => !saturated(r)).map((r) => r.throughput));
}

const fmt = (n: number | undefined, digits = 0) =>
  n === undefined || Number.isNaN(n) ? 'n/a' : n.toFixed(digits);

function describe(r: StepFigures): string {
  const failures = Object.entries(r.failures)
    .map(([k, v]) => `${k}×${v}`)
    .join(' ');
  return `${fmt(r.throughput)}/s ok, p50 ${fmt(r.p50Ms, 1)} ms, p99 ${fmt(r.p99Ms, 1)} ms (left late p99 ${fmt(r.lateP99Ms, 1)} ms)${failures ? `, ${failures}` : ''}${r.skipped ? `, skipped ${r.skipped}` : ''}`;
}

// ---- the runs --------------------------------------------------------------------------------------

async function createTopic(bench: BenchStack, name: string, prefix: string): Promise<void> {
  const raw = topicNames(prefix).raw;
  const spec = benchTopicCatalog(prefix, 12).find((t) => t.name === raw)!;
  await withAdmin(bench.kafka('bench-topics'), (admin) => ensureTopics(admin, [{ ...spec, name }]));
}

function startIngest(bench: BenchStack, prefix: string, port: number, opsPort: number, logFile: string) {
  const profileDir = opts['profile-dir'];
  return spawnHookledger(
    ['ingest'],
    {
      ...bench.env,
      TOPIC_PREFIX: prefix,
      INGEST_HOST: '127.0.0.1',
      INGEST_PORT: String(port),
      INGEST_OPS_PORT: String(opsPort),
      HOOKLEDGER_SOURCES: JSON.stringify({ bench: { keys: { k1: KEY } } }),
      HOOKLEDGER_LOCAL_STACK: 'true',
      LOG_LEVEL: opts['log-level'],
      INGEST_WORKERS: String(WORKERS),
    },
    logFile,
    profileDir
      ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`]
      : opts['ingest-node-flags'].split(' ').filter(Boolean),
  );
}

/**
 * Where ingest's own thread stood still during a step, from its default metrics: the event loop's delay
 * (prom-client resets its histogram at each scrape, so `after` covers the step) and the time V8's
 * collector paused it. A request that arrives while the loop stands still waits in the socket before
 * ingest's request-duration histogram starts counting it.
 */
function eventLoopStalls(before: string, after: string) {
  const value = (text: string, name: string) =>
    Number(new RegExp(`^hookledger_ingest_${name} ([0-9.e+-]+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
  const gcSum = (text: string, kind: string) =>
    value(text, `nodejs_gc_duration_seconds_sum\\{kind="${kind}"\\}`);
  const gcCount = (text: string, kind: string) =>
    value(text, `nodejs_gc_duration_seconds_count\\{kind="${kind}"\\}`);
  return {
    delayP99Ms: value(after, 'nodejs_eventloop_lag_p99_seconds') * 1000,
    delayMaxMs: value(after, 'nodejs_eventloop_lag_max_seconds') * 1000,
    majorGcs: gcCount(after, 'major') - gcCount(before, 'major'),
    majorGcMs: (gcSum(after, 'major') - gcSum(before, 'major')) * 1000,
    minorGcMs: (gcSum(after, 'minor') - gcSum(before, 'minor')) * 1000,
  };
}

/** The share of ingest's own 200s answered within `le` seconds between two scrapes of /metrics. */
function servedWithin(before: string, after: string, le: string): number {
  const bucket = (text: string, bound: string) =>
    Number(
      new RegExp(
        `hookledger_ingest_request_duration_seconds_bucket\\{le="${bound.replace('+', '\\+')}",source="bench",status="200"\\} (\\d+)`,
      ).exec(text)?.[1] ?? 0,
    );
  const total = bucket(after, '+Inf') - bucket(before, '+Inf');
  return total > 0 ? (bucket(after, le) - bucket(before, le)) / total : Number.NaN;
}

async function benchHttp(bench: BenchStack, brokerPid: number | undefined, dir: string) {
  const prefix = `bench-${randomBytes(3).toString('hex')}.`;
  await createTopic(bench, topicNames(prefix).raw, prefix);
  const [ingestPort, opsPort, barePort] = [await freePort(), await freePort(), await freePort()];
  const ingestChild = startIngest(bench, prefix, ingestPort, opsPort, join(dir, 'ingest.log'));
  const bareChild = killedWithUs(
    spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'tools/bench/ingest-bare.ts')], {
      cwd: ROOT,
      env: { ...process.env, PORT: String(barePort) },
      stdio: ['ignore', 'ignore', 'inherit'],
    }),
  );
  try {
    await waitReady(`http://127.0.0.1:${opsPort}`);
    await waitReady(`http://127.0.0.1:${barePort}`);
    const load = deliveries(2_000);
    const ingest: Target = { name: 'ingest', port: ingestPort, pid: ingestChild.pid, steps: [], done: false };
    const bare: Target = { name: 'bare fastify', port: barePort, pid: bareChild.pid, steps: [], done: false };
    await rampTogether([ingest, bare], load, brokerPid);

    const max = maxThroughput(ingest.steps);
    const halfRate = Math.max(50, Math.floor(max / 2));
    await pause(5_000);
    const before = await scrape(opsPort);
    const half = await measuredStep(ingestPort, load, halfRate, {
      target: ingestChild.pid,
      broker: brokerPid,
    });
    const after = await scrape(opsPort);
    const serverWithin = {
      ms25: servedWithin(before, after, '0.025'),
      ms50: servedWithin(before, after, '0.05'),
    };
    const stalls = eventLoopStalls(before, after);
    log(`ingest at half its max (${halfRate}/s): ${describe(half)}; ingest's ${JSON.stringify(stalls)}`);
    const batches = Number(/hookledger_ingest_produce_batch_records_count (\d+)/.exec(after)?.[1]);
    const records = Number(/hookledger_ingest_produce_batch_records_sum (\d+)/.exec(after)?.[1]);
    return {
      ingest: {
        steps: ingest.steps,
        max,
        half,
        serverWithin,
        stalls,
        peakRssMiB: treeRssMiB(ingestChild.pid, 'VmHWM'),
        meanBatch: records / batches,
      },
      bare: { steps: bare.steps, max: maxThroughput(bare.steps), peakRssMiB: rssMiB(bareChild.pid, 'VmHWM') },
    };
  } finally {
    await Promise.all([stopChild(ingestChild), stopChild(bareChild)]);
  }
}

interface PerfFigures {
  recordsPerSec: number;
  avgMs: number;
  p50Ms: number;
  p99Ms: number;
  brokerCpuUsPerRecord?: number;
  line: string;
}

async function benchProducerPerf(bench: BenchStack, brokerPid: number | undefined): Promise<PerfFigures> {
  const prefix = `bench-${randomBytes(3).toString('hex')}.`;
  const topic = `${prefix}producer-perf`;
  await createTopic(bench, topic, prefix);
  const records = Number(opts['perf-records']);
  const broker0 = processCpuSeconds(brokerPid);
  const output = await kafkaToolOutput('producer-perf-test', [
    '--topic',
    topic,
    '--num-records',
    String(records),
    '--record-size',
    String(RECORD_SIZE),
    '--throughput',
    '-1',
    ...(bench.jvmClientConfig ? ['--producer.config', bench.jvmClientConfig] : []),
    '--producer-props',
    `bootstrap.servers=${bench.stack.brokers.join(',')}`,
    'acks=all',
    'enable.idempotence=true',
  ]);
  const broker1 = processCpuSeconds(brokerPid);
  const line = output.trim().split('\n').at(-1)!;
  const number = (re: RegExp) => Number(re.exec(line)?.[1]);
  return {
    recordsPerSec: number(/([\d.]+) records\/sec/),
    avgMs: number(/([\d.]+) ms avg latency/),
    p50Ms: number(/(\d+) ms 50th/),
    p99Ms: number(/(\d+) ms 99th/),
    brokerCpuUsPerRecord:
      broker0 !== undefined && broker1 !== undefined ? ((broker1 - broker0) / records) * 1e6 : undefined,
    line,
  };
}

// ---- the report ------------------------------------------------------------------------------------

function stepTable(steps: StepFigures[], withBroker: boolean): string {
  const head = withBroker
    ? '| offered /s | 200s /s | p50 ms | p99 ms | non-200 | ingest CPU µs/req | broker CPU µs/req | RSS MiB |\n|---:|---:|---:|---:|---:|---:|---:|---:|'
    : '| offered /s | 200s /s | p50 ms | p99 ms | non-200 | server CPU µs/req | RSS MiB |\n|---:|---:|---:|---:|---:|---:|---:|';
  const rows = steps.map((r) => {
    const failed = r.sent - r.ok + r.skipped;
    const cells = [
      r.offeredRate,
      fmt(r.throughput),
      fmt(r.p50Ms, 1),
      fmt(r.p99Ms, 1),
      failed,
      fmt(r.cpuUsPerRequest),
    ];
    if (withBroker) cells.push(fmt(r.brokerCpuUsPerRequest));
    cells.push(fmt(r.rssMiB));
    return `| ${cells.join(' | ')} |`;
  });
  return [head, ...rows].join('\n');
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'hookledger-bench-'));
  let bench: BenchStack | undefined;
  try {
    bench = await startBenchStack({ jvmTools: true });
    const { stack } = bench;
    const brokerPort = Number(stack.brokers[0]!.split(':').at(-1));
    const brokerPid = stack.pids().kafka ?? pidListeningOn(brokerPort);
    log(`stack: ${stack.describe()}; broker pid ${brokerPid ?? 'unknown'}`);

    const load = () => loadavg()[0]!.toFixed(1);
    const loads: string[] = [load()];
    const { ingest, bare } = await benchHttp(bench, brokerPid, dir);
    loads.push(load());
    const perf = await benchProducerPerf(bench, brokerPid);
    loads.push(load());
    log(`producer perf test: ${perf.line}`);

    // Targets (issue #20): at least 0.9× the bare route's max sustained rate, p99 ≤ 25 ms at half of ingest's max.
    const reachesTarget = ingest.max >= 0.9 * bare.max;
    const p99Ok = ingest.half.p99Ms <= 25;
    const cpu = cpus();
    const section = [
      '## Ingest',
      '',
      `Reproduce: \`${COMMAND}${WORKERS > 1 ? ` -- --ingest-workers ${WORKERS}` : ''}\` (with \`KAFKA_BROKERS\` and \`SCHEMA_REGISTRY_URL\` set it uses that stack, else it starts the local one).`,
      `Measured ${new Date().toISOString().slice(0, 10)} on ${cpu.length} × ${cpu[0]?.model.trim() ?? 'unknown CPU'}, ${(totalmem() / 2 ** 30).toFixed(1)} GiB RAM, Node ${process.version};`,
      `${stack.describe().split(' (logs')[0]}. Everything — load generator, ingest, broker, registry — shares these cores, so the`,
      `figures are a floor for this machine, not a capacity plan (1-minute load average before and after the HTTP runs and the perf test: ${loads.join(', ')}).`,
      '',
      `Load: signed ${RECORD_SIZE}-byte JSON deliveries (2,000 distinct webhook ids, cycled), open loop: each request leaves on`,
      'schedule whatever the answers do and its latency counts from its scheduled departure; prebuilt requests over up to 256',
      "keep-alive connections (tools/bench/raw-http-pool.ts, about half node:http's CPU per request). Ingest and the bare",
      'route run side by side and take turns at each rate, so both meet the same machine.',
      `${STEP_S} s per offered rate after a 3 s warm-up; a target leaves the ramp at the first rate it cannot keep (under 90 % of`,
      `offered, over 1 % non-200, p99 over 1 s or p50 over ${MAX_KEPT_P50_MS} ms; such a step is run twice, the better run counts, so one burst from a neighbour`,
      'does not end it). "Max sustained" is the best throughput of a step it kept.',
      `Ingest runs as \`hookledger ingest${WORKERS > 1 ? ` --workers ${WORKERS}` : ''}\` (LOG_LEVEL=${opts['log-level']}: a summary line every 10 s, one line per request only at debug; defaults: linger 2 ms, batches up to 500`,
      "records and 5 of them in flight, deadline 10 s; librdkafka's idempotent producer) against a raw topic of 12 partitions, replication factor 1;",
      "every 200 waited for its record's acks=all delivery report.",
      '',
      '### Summary',
      '',
      '| | max sustained /s | notes |',
      '|---|---:|---|',
      `| ingest | ${fmt(ingest.max)} | peak RSS ${fmt(ingest.peakRssMiB)} MiB, mean ${fmt(ingest.meanBatch, 1)} records per produce call |`,
      `| (a) bare Fastify route, same load | ${fmt(bare.max)} | the HTTP ceiling: reads the body, answers 200; peak RSS ${fmt(bare.peakRssMiB)} MiB |`,
      `| (b) Kafka producer perf test, ${RECORD_SIZE} B, acks=all, idempotent | ${fmt(perf.recordsPerSec)} | ${opts['perf-records']} records, closed loop; latency avg ${fmt(perf.avgMs, 1)} ms, p50 ${fmt(perf.p50Ms)} ms, p99 ${fmt(perf.p99Ms)} ms; broker CPU ${fmt(perf.brokerCpuUsPerRecord)} µs/record |`,
      '',
      `- Ingest reached ${fmt(ingest.max)}/s = ${fmt(ingest.max / bare.max, 2)}× the bare route's ${fmt(bare.max)}/s (target ≥ 0.9×): **${reachesTarget ? 'met' : 'not met'}**. Kafka alone (b) takes ${fmt(perf.recordsPerSec)}/s.`,
      `- At half its max (${fmt(ingest.half.offeredRate)}/s offered): p50 ${fmt(ingest.half.p50Ms, 1)} ms, p99 ${fmt(ingest.half.p99Ms, 1)} ms (target ≤ 25 ms): **${p99Ok ? 'met' : 'not met'}**; ingest CPU ${fmt(ingest.half.cpuUsPerRequest)} µs/request, broker CPU ${fmt(ingest.half.brokerCpuUsPerRequest)} µs/request.`,
      `  Measured inside ingest (its request-duration histogram, so without the load generator's own queueing): ${fmt(100 * ingest.serverWithin.ms25, 2)} % of the 200s within 25 ms, ${fmt(100 * ingest.serverWithin.ms50, 2)} % within 50 ms.`,
      `  Ingest's thread during that step: event-loop delay p99 ${fmt(ingest.stalls.delayP99Ms, 1)} ms, max ${fmt(ingest.stalls.delayMaxMs, 1)} ms; ${fmt(ingest.stalls.majorGcs)} full collections pausing it ${fmt(ingest.stalls.majorGcMs)} ms, scavenges ${fmt(ingest.stalls.minorGcMs)} ms; the load generator sent its p99 request ${fmt(ingest.half.lateP99Ms, 1)} ms late (counted in the p99 above: the open loop's latency starts at the schedule).`,
      '',
      '### Ingest, by offered rate',
      '',
      stepTable(ingest.steps, true),
      '',
      '### Bare Fastify route, by offered rate',
      '',
      stepTable(bare.steps, false),
      '',
      '### Kafka producer perf test output',
      '',
      '```',
      perf.line,
      '```',
    ].join('\n');
    console.log(section);
    if (!opts['no-write']) writeSection('ingest', section);
  } finally {
    await bench?.stop();
    if (opts['keep-dir']) log(`kept ${dir}`);
    else await rm(dir, { recursive: true, force: true });
  }
}

await main();
