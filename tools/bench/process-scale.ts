// `npm run bench:process -- --scale-out`: the dedupe-router with one instance, then with two instances
// of the same consumer group, over raw topics filled alike (same generated deliveries, same partition
// count). Each instance is its own process with its own HOOKLEDGER_INSTANCE_ID, as two pods of the
// StatefulSet. Writes the throughput ratio, the CPU per event and how the cores were shared into
// docs/benchmarks.md between the bench:scale-out markers.
import { randomBytes } from 'node:crypto';
import { availableParallelism, cpus, totalmem } from 'node:os';
import { dedupeRouterAppId } from '../../processors/dedupe-router/main.js';
import { topicNames } from '../../schemas/topics.js';
import type { BenchStack } from './bench-stack.js';
import { machineBusySeconds, peakRssMiB, processCpuSeconds } from './proc-stats.js';
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
  instances: number;
  records: number;
  seconds: number;
  /** CPU seconds of the instances together, of the broker, and busy cores machine-wide, over the window. */
  instancesCpu: number;
  brokerCpu: number | undefined;
  machineBusy: number;
  /** Records each instance processed in the window. */
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

export const rate = (r: ScaleRun) => r.records / r.seconds;
export const cpuPerEvent = (r: ScaleRun) => (r.instancesCpu / r.records) * 1e6;

export function renderScaleOut(
  runs: readonly ScaleRun[],
  setup: { ids: number; retries: number; partitions: number; stack: string; argv: string[] },
): string {
  const [one, two] = runs;
  const cores = availableParallelism();
  const cpu = cpus()[0]?.model.trim() ?? 'unknown CPU';
  const row = (r: ScaleRun) =>
    `| ${r.instances} | ${r.records.toLocaleString('en-US')} | ${r.seconds.toFixed(1)} | ${rate(r).toFixed(0)} | ${cpuPerEvent(r).toFixed(1)} | ${(r.instancesCpu / r.seconds).toFixed(2)} | ${r.brokerCpu === undefined ? '' : (r.brokerCpu / r.seconds).toFixed(2)} | ${(r.machineBusy / r.seconds).toFixed(2)} | ${r.perInstance.map((n) => n.toLocaleString('en-US')).join(' + ')} | ${r.load1.toFixed(1)} |`;
  const ratio = rate(two!) / rate(one!);
  return [
    '## Scale-out: the router with 1 and 2 instances',
    '',
    `Reproduce: \`npm run bench:process -- --scale-out${setup.argv.length > 0 ? ` ${setup.argv.join(' ')}` : ''}\` (defaults \`--ids 400000 --retries 40000 --partitions 6\`).`,
    `Measured ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC on ${cores} × ${cpu} (nproc ${cores}), ${(totalmem() / 2 ** 30).toFixed(1)} GiB RAM, Node ${process.version};`,
    `${setup.stack}. Two raw topics filled alike (${setup.ids.toLocaleString('en-US')} webhook ids + ${setup.retries.toLocaleString('en-US')} retries, ${setup.partitions} partitions): one read by a`,
    'single router process, the other by two router processes of one consumer group, each with its own `HOOKLEDGER_INSTANCE_ID`',
    '(two pods of the StatefulSet). Window: first commit seen to the group having committed every record, so the second',
    "instance's join (a rebalance) is inside it. The instances, the broker, the registry and this driver share the same cores.",
    '',
    '| instances | records | window s | events/s | router CPU µs/event | router cores | broker cores | cores busy | per instance | 1-min load before |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|',
    row(one!),
    row(two!),
    '',
    `- Scale-out ratio (2 instances / 1): **${ratio.toFixed(2)}×** (${rate(two!).toFixed(0)} against ${rate(one!).toFixed(0)} events/s).`,
    ...(Math.max(one!.load1, two!.load1) > cores
      ? [
          `- Measured under load: the 1-minute load average was ${one!.load1.toFixed(1)} and ${two!.load1.toFixed(1)} on ${cores} cores before the runs (other work on the machine), so the routers got the share of the cores shown above, not the cores.`,
        ]
      : []),
    `- CPU per event: ${cpuPerEvent(one!).toFixed(1)} µs with one instance, ${cpuPerEvent(two!).toFixed(1)} µs with two. What it means for sizing: docs/scaling.md.`,
  ].join('\n');
}

export async function scaleOut(
  bench: BenchStack,
  env: Env,
  options: { ids: number; retries: number; write: boolean; argv: string[] },
): Promise<void> {
  const prefixes = [1, 2].map(() => `bench-scale-${randomBytes(3).toString('hex')}.`);
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
      log(`dedupe-router with ${i + 1} instance(s)…`);
      const run = await measure(env, prefix, i + 1, totals[i]!);
      log(
        `${i + 1} instance(s): ${rate(run).toFixed(0)} events/s, ${cpuPerEvent(run).toFixed(1)} µs CPU/event`,
      );
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
