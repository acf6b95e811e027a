// `npm run bench:process -- --scale-out`: the dedupe-router with one instance, then with two instances
// of the same consumer group, over raw topics filled alike (same generated deliveries, same partition
// count). Each instance is its own process with its own HOOKLEDGER_INSTANCE_ID, as two pods of the
// StatefulSet. Writes the throughput ratio, the CPU per event and how the cores were shared into
// docs/benchmarks.md between the bench:scale-out markers.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { dedupeRouterAppId } from '../../processors/dedupe-router/main.js';
import { topicNames } from '../../schemas/topics.js';
import type { BenchStack } from './bench-stack.js';
import { freePort, spawnHookledger, stopChild } from './children.js';
import { machineBusySeconds, peakRssMiB, processCpuSeconds, processTree } from './proc-stats.js';
import { reproducibleArgv } from './process-report.js';
import {
  type Env,
  killWorker,
  load1,
  log,
  prefill,
  rawProgress,
  spawnWorker,
  type Worker,
} from './process-run.js';
import { writeSection } from './report-section.js';

export interface ScaleRun {
  /** How the routers ran: `1`, `2` (processes), or `1 × 2 threads`. */
  label: string;
  instances: number;
  records: number;
  seconds: number;
  /** CPU seconds of the instances together, of the broker, and busy cores machine-wide, over the window. */
  instancesCpu: number;
  brokerCpu: number | undefined;
  machineBusy: number;
  /** Records each instance processed in the window (empty: threads of one process, not told apart). */
  perInstance: number[];
  load1: number;
  peakRssMiB: (number | undefined)[];
}

async function counts(workers: readonly Worker[]): Promise<number[]> {
  return Promise.all(
    workers.map(async (w) => {
      w.send({ type: 'count' });
      return (await w.next('count')).records;
    }),
  );
}

/** Runs `instances` routers of one group over the prefix's raw topic until it is all committed. */
export async function measure(
  env: Env,
  prefix: string,
  instances: number,
  total: number,
  extraEnv: Record<string, string> = {},
  /** Each worker runs under `node --cpu-prof`, its profile written here. */
  profileDir?: string,
): Promise<ScaleRun> {
  const workers = Array.from({ length: instances }, (_, i) =>
    spawnWorker(
      env,
      prefix,
      { mode: 'router' },
      { instanceId: `bench-scale-${instances}-${i}`, extraEnv, ...(profileDir ? { profileDir } : {}) },
    ),
  );
  try {
    await Promise.all(workers.map((w) => w.started));
    const progress = rawProgress(env, dedupeRouterAppId(prefix), topicNames(prefix).raw, total);
    const load = load1();
    const snap = async () => ({
      at: performance.now(),
      cpu: workers.map((w) => processCpuSeconds(w.pid) ?? Number.NaN),
      broker: processCpuSeconds(env.brokerPid),
      machine: machineBusySeconds(),
      records: await counts(workers),
    });
    let first: Awaited<ReturnType<typeof snap>> | undefined;
    const deadline = performance.now() + 600_000;
    for (;;) {
      const p = await progress();
      if (first === undefined && p.any) first = await snap();
      if (first !== undefined && p.done) break;
      if (performance.now() > deadline) throw new Error('the routers did not finish within 10 minutes');
      await new Promise((r) => setTimeout(r, 50));
    }
    const last = await snap();
    // A batch is counted just after its commit returns: let the counts settle.
    await new Promise((r) => setTimeout(r, 300));
    const settled = await counts(workers);
    const perInstance = settled.map((n, i) => n - first!.records[i]!);
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    const run: ScaleRun = {
      label: String(instances),
      instances,
      records: sum(perInstance),
      seconds: (last.at - first!.at) / 1000,
      instancesCpu: sum(last.cpu) - sum(first!.cpu),
      brokerCpu:
        last.broker !== undefined && first!.broker !== undefined ? last.broker - first!.broker : undefined,
      machineBusy: last.machine - first!.machine,
      perInstance,
      load1: load,
      peakRssMiB: workers.map((w) => peakRssMiB(w.pid)),
    };
    for (const w of workers) await w.stop();
    return run;
  } catch (error) {
    for (const w of workers) killWorker(w);
    throw error;
  }
}

/**
 * One `hookledger process --only dedupe-router --threads <threads>` over the prefix's raw topic, as an
 * operator runs it (Kafka Streams' num.stream.threads): its records are the group's committed offsets,
 * its CPU and memory those of the command and the stream threads it forks.
 */
export async function measureThreads(
  env: Env,
  prefix: string,
  threads: number,
  total: number,
): Promise<ScaleRun> {
  const dir = await mkdtemp(join(tmpdir(), 'hookledger-bench-threads-'));
  let finished = false;
  const child = spawnHookledger(
    ['process', '--only', 'dedupe-router', '--threads', String(threads)],
    {
      ...env.bench.env,
      TOPIC_PREFIX: prefix,
      HOOKLEDGER_INSTANCE_ID: `bench-threads-${threads}`,
      PROCESSOR_HOST: '127.0.0.1',
      PROCESSOR_PORT: String(await freePort()),
      LOG_LEVEL: 'warn',
    },
    join(dir, 'process.log'),
  );
  try {
    const groupId = dedupeRouterAppId(prefix);
    const raw = topicNames(prefix).raw;
    const committed = async () =>
      [...(await env.admin.committed(groupId, [raw])).values()].reduce((s, o) => s + Math.max(0, o), 0);
    const tree = () => processTree(child.pid);
    const cpu = (pids: number[]) => pids.reduce((s, pid) => s + (processCpuSeconds(pid) ?? 0), 0);
    const load = load1();
    let first: { at: number; cpu: number; broker?: number; machine: number; records: number } | undefined;
    let pids: number[] = [];
    const deadline = performance.now() + 600_000;
    for (;;) {
      if (child.exitCode !== null)
        throw new Error(`hookledger process exited with ${child.exitCode}: ${dir}/process.log`);
      const records = await committed();
      if (first === undefined && records > 0) {
        pids = tree();
        first = {
          at: performance.now(),
          cpu: cpu(pids),
          broker: processCpuSeconds(env.brokerPid),
          machine: machineBusySeconds(),
          records,
        };
      }
      if (first !== undefined && records >= total) break;
      if (performance.now() > deadline) throw new Error('the threads did not finish within 10 minutes');
      await new Promise((r) => setTimeout(r, 50));
    }
    const at = performance.now();
    const lastCpu = cpu(pids);
    const broker = processCpuSeconds(env.brokerPid);
    const machine = machineBusySeconds();
    const peak = pids.reduce((s, pid) => s + (peakRssMiB(pid) ?? 0), 0);
    finished = true;
    return {
      label: `1 × ${threads} threads`,
      instances: threads,
      records: total - first.records,
      seconds: (at - first.at) / 1000,
      instancesCpu: lastCpu - first.cpu,
      brokerCpu: broker !== undefined && first.broker !== undefined ? broker - first.broker : undefined,
      machineBusy: machine - first.machine,
      perInstance: [],
      load1: load,
      peakRssMiB: [peak],
    };
  } finally {
    await stopChild(child);
    // A failed run keeps the command's log for the error message to point at.
    if (finished) await rm(dir, { recursive: true, force: true });
  }
}

export const rate = (r: ScaleRun) => r.records / r.seconds;
export const cpuPerEvent = (r: ScaleRun) => (r.instancesCpu / r.records) * 1e6;

export function renderScaleOut(
  runs: readonly ScaleRun[],
  setup: { ids: number; retries: number; partitions: number; stack: string; argv: string[] },
): string {
  const [one, two, threaded] = runs;
  const cores = availableParallelism();
  const cpu = cpus()[0]?.model.trim() ?? 'unknown CPU';
  const row = (r: ScaleRun) =>
    `| ${r.label} | ${r.records.toLocaleString('en-US')} | ${r.seconds.toFixed(1)} | ${rate(r).toFixed(0)} | ${cpuPerEvent(r).toFixed(1)} | ${(r.instancesCpu / r.seconds).toFixed(2)} | ${r.brokerCpu === undefined ? '' : (r.brokerCpu / r.seconds).toFixed(2)} | ${(r.machineBusy / r.seconds).toFixed(2)} | ${r.perInstance.length === 0 ? '—' : r.perInstance.map((n) => n.toLocaleString('en-US')).join(' + ')} | ${r.load1.toFixed(1)} |`;
  const ratio = rate(two!) / rate(one!);
  const loads = runs.map((r) => r.load1.toFixed(1));
  return [
    '## Scale-out: the router with 1 and 2 instances',
    '',
    `Reproduce: \`npm run bench:process -- ${['--scale-out', ...reproducibleArgv(setup.argv)].join(' ')}\` (defaults \`--ids 400000 --retries 40000 --partitions 6\`; \`--threads 2\` adds a run of one process with 2 stream threads).`,
    `Measured ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC on ${cores} × ${cpu} (nproc ${cores}), ${(totalmem() / 2 ** 30).toFixed(1)} GiB RAM, Node ${process.version};`,
    `${setup.stack}. Raw topics filled alike (${setup.ids.toLocaleString('en-US')} webhook ids + ${setup.retries.toLocaleString('en-US')} retries, ${setup.partitions} partitions): one read by a`,
    'single router process, another by two router processes of one consumer group, each with its own `HOOKLEDGER_INSTANCE_ID`',
    `(two pods of the StatefulSet)${threaded === undefined ? '' : `, a third by one \`hookledger process --only dedupe-router --threads ${threaded.instances}\` (its CPU and memory: the command and the stream threads it forks)`}.`,
    'Window: first commit seen to the group having committed every record, so the second',
    "instance's join (a rebalance) is inside it. The instances, the broker, the registry and this driver share the same cores.",
    '',
    '| instances | records | window s | events/s | router CPU µs/event | router cores | broker cores | cores busy | per instance | 1-min load before |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---|---:|',
    ...runs.map(row),
    '',
    `- Scale-out ratio (2 instances / 1): **${ratio.toFixed(2)}×** (${rate(two!).toFixed(0)} against ${rate(one!).toFixed(0)} events/s).`,
    ...(threaded === undefined
      ? []
      : [
          `- One process with ${threaded.instances} stream threads / one instance: **${(rate(threaded) / rate(one!)).toFixed(2)}×** (${rate(threaded).toFixed(0)} events/s).`,
        ]),
    ...(Math.max(...runs.map((r) => r.load1)) > cores
      ? [
          `- Measured under load: the 1-minute load average was ${loads.slice(0, -1).join(', ')} and ${loads.at(-1)} on ${cores} cores before the runs (other work on the machine), so the routers got the share of the cores shown above, not the cores.`,
        ]
      : []),
    `- CPU per event: ${cpuPerEvent(one!).toFixed(1)} µs with one instance, ${cpuPerEvent(two!).toFixed(1)} µs with two${threaded === undefined ? '' : `, ${cpuPerEvent(threaded).toFixed(1)} µs with ${threaded.instances} threads`}. What it means for sizing: docs/scaling.md.`,
  ].join('\n');
}

export async function scaleOut(
  bench: BenchStack,
  env: Env,
  options: { ids: number; retries: number; write: boolean; argv: string[]; threads?: number },
): Promise<void> {
  const runsWanted = options.threads === undefined ? 2 : 3;
  const prefixes = Array.from({ length: runsWanted }, () => `bench-scale-${randomBytes(3).toString('hex')}.`);
  try {
    const totals: number[] = [];
    for (const prefix of prefixes) {
      log(
        `producing ${options.ids} ids + ${options.retries} retries to ${topicNames(prefix).raw} (${env.partitions} partitions)`,
      );
      totals.push((await prefill(env, prefix, options.ids, options.retries)).records);
    }
    const runs: ScaleRun[] = [];
    for (const [i, prefix] of prefixes.entries()) {
      const threads = i === 2 ? options.threads! : undefined;
      log(
        threads === undefined
          ? `dedupe-router with ${i + 1} instance(s)…`
          : `dedupe-router, one process with ${threads} threads…`,
      );
      const run =
        threads === undefined
          ? await measure(env, prefix, i + 1, totals[i]!)
          : await measureThreads(env, prefix, threads, totals[i]!);
      log(`${run.label}: ${rate(run).toFixed(0)} events/s, ${cpuPerEvent(run).toFixed(1)} µs CPU/event`);
      runs.push(run);
    }
    const section = renderScaleOut(runs, {
      ids: options.ids,
      retries: options.retries,
      partitions: env.partitions,
      stack: bench.stack.describe(),
      argv: options.argv,
    });
    console.log(section);
    if (options.write) writeSection('scale-out', section);
  } finally {
    const all = await env.admin.listTopics().catch(() => [] as string[]);
    const ours = all.filter((t) => prefixes.some((p) => t.startsWith(p)));
    if (ours.length > 0) await env.admin.deleteTopics(ours).catch(() => undefined);
  }
}
