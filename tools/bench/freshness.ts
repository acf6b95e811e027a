// `npm run bench:freshness`: how long a webhook takes from its POST to being visible to a read_committed
// consumer of webhooks.unique, at a steady offered rate (open loop), through `hookledger ingest` and
// `hookledger process --only dedupe-router` as a deployment runs them. Writes docs/benchmarks.md's
// freshness section with the command that reproduces it.
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { KafkaConsumer, Message } from '@confluentinc/kafka-javascript';
import { call, connect, createConsumer, disconnect } from '../../runtime/kafka/rdkafka.js';
import { topicNames } from '../../schemas/topics.js';
import { type BenchStack, startBenchStack } from './bench-stack.js';
import { freePort, runHookledger, spawnHookledger, stopChild, waitReady } from './children.js';
import { type Delivery, runStep, signedDelivery } from './ingest-load.js';
import { writeSection } from './report-section.js';

const COMMAND = 'npm run bench:freshness';
const KEY = 'bench-freshness-key-0123456789abcdef0123456789';

const { values: opts } = parseArgs({
  options: {
    rate: { type: 'string', default: '500' },
    seconds: { type: 'string', default: '60' },
    'warmup-seconds': { type: 'string', default: '5' },
    partitions: { type: 'string', default: '6' },
    // Comma-separated PROCESSOR_COMMIT_INTERVAL_MS values to compare (`25ms,50ms`), each a trial per round
    // on the same stack, alternating; unset, the router's default.
    'commit-interval': { type: 'string' },
    rounds: { type: 'string', default: '1' },
    'no-write': { type: 'boolean', default: false },
  },
});
const RATE = Number(opts.rate);
const SECONDS = Number(opts.seconds);
const WARMUP_S = Number(opts['warmup-seconds']);
const ROUNDS = Number(opts.rounds);
const INTERVALS: (string | undefined)[] = opts['commit-interval']?.split(',').map((v) => v.trim()) ?? [
  undefined,
];
const log = (message: string) => console.error(`bench:freshness ${message}`);

/** A delivery shaped like the platform's (~1 KB), each with its own webhook id. */
function delivery(n: number, run: string): Delivery {
  const body = Buffer.from(
    JSON.stringify({
      webhook: { id: `wh_fresh_${run}_${n}`, trigger: 'EnergySwitchUpdated', date: new Date().toISOString() },
      query: { api: 'https://api.platform.example/v1/graphql', variables: { id: `es_${n % 500}` } },
      data: {
        getEnergySwitch: {
          __typename: 'EnergySwitch',
          id: `es_${n % 500}`,
          date: '2026-11-20T10:15:30.123Z',
          postcode: 'SW1A 1AA',
          tariffName: 'Fixed 12M',
          projectedSpend: { currency: 'GBP', amount: 1210.1 },
          commission: { status: 'commissionExpected', statusDate: '2026-11-20T10:15:30.123Z' },
          pad: 'x'.repeat(600),
        },
      },
    }),
  );
  return signedDelivery('/webhooks/bench', body, KEY);
}

/** The router's own account of its transactions, from its /metrics: how many, and the mean commit. */
async function routerTransactions(processorPort: number): Promise<{ count: number; meanMs: number }> {
  const text = await (await fetch(`http://127.0.0.1:${processorPort}/metrics`)).text();
  const sample = (name: string) =>
    Number(
      new RegExp(`^${name}\\{[^}]*app="dedupe-router"[^}]*\\} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN,
    );
  const count = sample('hookledger_stream_transaction_seconds_count');
  return { count, meanMs: (sample('hookledger_stream_transaction_seconds_sum') / count) * 1000 };
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** Reads webhooks.unique read_committed from its start, noting when each webhook id became visible. */
async function watchUnique(bench: BenchStack, topic: string, partitions: number) {
  const seenAt = new Map<string, number>();
  const consumer: KafkaConsumer = createConsumer(bench.kafka('bench-freshness-reader'), {
    // Required by librdkafka even for a reader that only assigns partitions: it never joins or commits.
    'group.id': `bench-freshness-${topic}`,
    'isolation.level': 'read_committed',
    'enable.auto.commit': false,
    'fetch.wait.max.ms': 10,
  } as never);
  await connect(consumer);
  consumer.setDefaultConsumeTimeout(20);
  consumer.assign(Array.from({ length: partitions }, (_, partition) => ({ topic, partition, offset: -2 })));
  let running = true;
  const loop = (async () => {
    while (running) {
      const batch = await call<Message[]>('consume', (cb) => consumer.consume(1_000, cb as never));
      const now = Date.now();
      for (const message of batch) {
        const key = message.key?.toString() ?? '';
        if (!seenAt.has(key)) seenAt.set(key, now);
      }
    }
  })();
  return {
    seenAt,
    async stop() {
      running = false;
      await loop;
      await disconnect(consumer);
    },
  };
}

/** One trial's figures: a fresh topic prefix, ingest and router started for it and stopped after. */
interface Trial {
  interval: string | undefined;
  p50: number;
  p99: number;
  max: number;
  counted: number;
  http: Awaited<ReturnType<typeof runStep>>;
  total: number;
  visible: number;
  transactions: { count: number; meanMs: number };
  load: [string, string];
}

async function runTrial(
  bench: BenchStack,
  dir: string,
  interval: string | undefined,
  seconds = SECONDS,
): Promise<Trial> {
  const children: ChildProcess[] = [];
  try {
    const run = randomBytes(3).toString('hex');
    const prefix = `bench-${run}.`;
    const [ingestPort, ingestOpsPort, processorPort] = [await freePort(), await freePort(), await freePort()];
    const env = {
      ...bench.env,
      TOPIC_PREFIX: prefix,
      HOOKLEDGER_LOCAL_STACK: 'true',
      HOOKLEDGER_SOURCES: JSON.stringify({ bench: { keys: { k1: KEY } } }),
      INGEST_HOST: '127.0.0.1',
      INGEST_PORT: String(ingestPort),
      INGEST_OPS_PORT: String(ingestOpsPort),
      PROCESSOR_HOST: '127.0.0.1',
      PROCESSOR_PORT: String(processorPort),
      LOG_LEVEL: 'warn',
      ...(interval === undefined ? {} : { PROCESSOR_COMMIT_INTERVAL_MS: interval }),
    };
    await runHookledger(
      ['topics', '--local', '--partitions', opts.partitions],
      env,
      join(dir, `topics-${run}.log`),
    );
    children.push(spawnHookledger(['ingest'], env, join(dir, `ingest-${run}.log`)));
    children.push(
      spawnHookledger(['process', '--only', 'dedupe-router'], env, join(dir, `process-${run}.log`)),
    );
    await waitReady(`http://127.0.0.1:${ingestOpsPort}`);
    await waitReady(`http://127.0.0.1:${processorPort}`);
    const watcher = await watchUnique(bench, topicNames(prefix).unique, Number(opts.partitions));

    const total = RATE * seconds;
    const deliveries = Array.from({ length: total }, (_, n) => delivery(n, run));
    const loadBefore = loadavg()[0]!.toFixed(1);
    log(`${total} deliveries at ${RATE}/s, commit interval ${interval ?? 'the default'}…`);
    const http = await runStep({ host: '127.0.0.1', port: ingestPort }, deliveries, {
      offeredRate: RATE,
      durationS: seconds,
    });
    // Stragglers: give the router a few seconds to make every acknowledged delivery visible.
    const waitUntil = Date.now() + 15_000;
    while (watcher.seenAt.size < http.ok && Date.now() < waitUntil)
      await new Promise((r) => setTimeout(r, 100));
    await watcher.stop();
    const transactions = await routerTransactions(processorPort);
    const loadAfter = loadavg()[0]!.toFixed(1);

    // Each delivery left on schedule: n / RATE seconds after the start (runStep's open loop).
    const started = http.startedAt;
    const latencies: number[] = [];
    for (let n = WARMUP_S * RATE; n < total; n++) {
      const seen = watcher.seenAt.get(`wh_fresh_${run}_${n}`);
      if (seen !== undefined) latencies.push(seen - (started + (n * 1000) / RATE));
    }
    latencies.sort((a, b) => a - b);
    return {
      interval,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      max: latencies.at(-1) ?? Number.NaN,
      counted: latencies.length,
      http,
      total,
      visible: watcher.seenAt.size,
      transactions,
      load: [loadBefore, loadAfter],
    };
  } finally {
    await Promise.all(children.map(stopChild));
  }
}

const fmt = (n: number, digits = 0) => (Number.isNaN(n) ? 'n/a' : n.toFixed(digits));
const median = (values: number[]) =>
  percentile(
    [...values].sort((a, b) => a - b),
    50,
  );

/** The section for one trial, as the bench has always written it. */
function singleTrialLines(t: Trial): string[] {
  return [
    `1-minute load average ${t.load[0]} before, ${t.load[1]} after.`,
    '',
    `From each POST's scheduled departure to the moment a read_committed consumer of \`webhooks.unique\` received it:`,
    `${RATE} signed deliveries/s (~1 KB, each a new webhook id), open loop, ${SECONDS} s, the first ${WARMUP_S} s left out;`,
    `\`hookledger ingest\` and \`hookledger process --only dedupe-router\` as child processes (LOG_LEVEL=warn), ${opts.partitions} partitions.`,
    '',
    '| | p50 ms | p99 ms | max ms | counted |',
    '|---|---:|---:|---:|---:|',
    `| POST → visible in webhooks.unique | ${fmt(t.p50)} | ${fmt(t.p99)} | ${fmt(t.max)} | ${t.counted} |`,
    `| the HTTP part (POST → 200) | ${fmt(t.http.p50Ms, 1)} | ${fmt(t.http.p99Ms, 1)} | ${fmt(t.http.maxMs, 1)} | ${t.http.ok} |`,
    '',
    `- Targets at 500 deliveries/s (issue #20): p50 ≤ 60 ms, p99 ≤ 250 ms: ${RATE === 500 ? `**${t.p50 <= 60 ? 'met' : 'not met'}**, **${t.p99 <= 250 ? 'met' : 'not met'}**` : 'not measured at 500/s'}.`,
    `- The router committed ${t.transactions.count} transactions (${fmt(t.transactions.count / SECONDS)}/s), ${fmt(t.transactions.meanMs, 1)} ms each on average from the commit's start to the brokers' answer (\`hookledger_stream_transaction_seconds\`).`,
    `- Acknowledged ${t.http.ok} of ${t.total}; visible in webhooks.unique: ${t.visible}${
      Object.keys(t.http.failures).length ? `; non-200: ${JSON.stringify(t.http.failures)}` : ''
    }.`,
  ];
}

/** Several trials: one row each, in the order run, then the medians per commit interval. */
function comparisonLines(trials: Trial[]): string[] {
  const row = (
    label: string,
    t: Pick<Trial, 'p50' | 'p99'> & { http: number; tx: number; commitMs: number; load: string },
  ) =>
    `| ${label} | ${fmt(t.p50)} | ${fmt(t.p99)} | ${fmt(t.http, 1)} | ${fmt(t.tx)} | ${fmt(t.commitMs, 1)} | ${t.load} |`;
  const lines = [
    `Each trial: ${RATE} signed deliveries/s (~1 KB, each a new webhook id), open loop, ${SECONDS} s, the first ${WARMUP_S} s left out,`,
    `POST → visible to a read_committed consumer of \`webhooks.unique\`; new topics, \`hookledger ingest\` and`,
    `\`hookledger process --only dedupe-router\` started for each trial on the same stack; ${ROUNDS} round(s), the intervals alternating.`,
    '',
    '| PROCESSOR_COMMIT_INTERVAL_MS | p50 ms | p99 ms | HTTP p50 ms | transactions/s | mean commit ms | 1-min load |',
    '|---|---:|---:|---:|---:|---:|---|',
  ];
  for (const t of trials)
    lines.push(
      row(t.interval ?? 'default', {
        p50: t.p50,
        p99: t.p99,
        http: t.http.p50Ms,
        tx: t.transactions.count / SECONDS,
        commitMs: t.transactions.meanMs,
        load: `${t.load[0]}–${t.load[1]}`,
      }),
    );
  for (const interval of INTERVALS) {
    const of = trials.filter((t) => t.interval === interval);
    lines.push(
      row(`**${interval ?? 'default'}, median**`, {
        p50: median(of.map((t) => t.p50)),
        p99: median(of.map((t) => t.p99)),
        http: median(of.map((t) => t.http.p50Ms)),
        tx: median(of.map((t) => t.transactions.count / SECONDS)),
        commitMs: median(of.map((t) => t.transactions.meanMs)),
        load: '',
      }),
    );
  }
  const lost = trials.filter((t) => t.visible < t.http.ok);
  lines.push(
    '',
    lost.length === 0
      ? '- Every acknowledged delivery became visible in every trial.'
      : `- Not all acknowledged deliveries became visible in ${lost.length} trial(s).`,
  );
  return lines;
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'hookledger-bench-freshness-'));
  let bench: BenchStack | undefined;
  try {
    bench = await startBenchStack();
    const { stack } = bench;
    log(`stack: ${stack.describe()}`);
    const trials: Trial[] = [];
    // A comparison starts with a short trial nobody counts: the first trial on a new stack also times the
    // broker's JIT warming up, which would land on whichever interval came first.
    if (ROUNDS * INTERVALS.length > 1) await runTrial(bench, dir, INTERVALS[0], 10);
    for (let round = 0; round < ROUNDS; round++)
      for (const interval of INTERVALS) trials.push(await runTrial(bench, dir, interval));
    const cpu = cpus();
    const options = [
      `--rate ${RATE} --seconds ${SECONDS}`,
      ...(opts['commit-interval'] === undefined ? [] : [`--commit-interval ${opts['commit-interval']}`]),
      ...(ROUNDS === 1 ? [] : [`--rounds ${ROUNDS}`]),
    ].join(' ');
    const section = [
      '## Freshness',
      '',
      `Reproduce: \`${COMMAND}\` (options: \`-- ${options}\`; with \`KAFKA_BROKERS\` and \`SCHEMA_REGISTRY_URL\` set it uses that stack).`,
      `Measured ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC on ${cpu.length} × ${cpu[0]?.model.trim() ?? 'unknown CPU'}, ${(totalmem() / 2 ** 30).toFixed(1)} GiB RAM, Node ${process.version};`,
      `${stack.describe().split(' (logs')[0]}.`,
      '',
      ...(trials.length === 1 ? singleTrialLines(trials[0]!) : comparisonLines(trials)),
    ].join('\n');
    console.log(section);
    if (!opts['no-write']) writeSection('freshness', section);
  } finally {
    await bench?.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
