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
    'no-write': { type: 'boolean', default: false },
  },
});
const RATE = Number(opts.rate);
const SECONDS = Number(opts.seconds);
const WARMUP_S = Number(opts['warmup-seconds']);
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

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'hookledger-bench-freshness-'));
  const children: ChildProcess[] = [];
  let bench: BenchStack | undefined;
  try {
    bench = await startBenchStack();
    const { stack } = bench;
    log(`stack: ${stack.describe()}`);
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
    };
    await runHookledger(['topics', '--local', '--partitions', opts.partitions], env, join(dir, 'topics.log'));
    children.push(spawnHookledger(['ingest'], env, join(dir, 'ingest.log')));
    children.push(spawnHookledger(['process', '--only', 'dedupe-router'], env, join(dir, 'process.log')));
    await waitReady(`http://127.0.0.1:${ingestOpsPort}`);
    await waitReady(`http://127.0.0.1:${processorPort}`);
    const watcher = await watchUnique(bench, topicNames(prefix).unique, Number(opts.partitions));

    const total = RATE * SECONDS;
    const deliveries = Array.from({ length: total }, (_, n) => delivery(n, run));
    const loadBefore = loadavg()[0]!.toFixed(1);
    const started = Date.now();
    log(`${total} deliveries at ${RATE}/s…`);
    const http = await runStep({ host: '127.0.0.1', port: ingestPort }, deliveries, {
      offeredRate: RATE,
      durationS: SECONDS,
    });
    // Stragglers: give the router a few seconds to make every acknowledged delivery visible.
    const waitUntil = Date.now() + 15_000;
    while (watcher.seenAt.size < http.ok && Date.now() < waitUntil)
      await new Promise((r) => setTimeout(r, 100));
    await watcher.stop();
    const loadAfter = loadavg()[0]!.toFixed(1);

    // Each delivery left on schedule: n / RATE seconds after the start (runStep's open loop).
    const latencies: number[] = [];
    for (let n = WARMUP_S * RATE; n < total; n++) {
      const seen = watcher.seenAt.get(`wh_fresh_${run}_${n}`);
      if (seen !== undefined) latencies.push(seen - (started + (n * 1000) / RATE));
    }
    latencies.sort((a, b) => a - b);
    const p99 = percentile(latencies, 99);
    const cpu = cpus();
    const fmt = (n: number, digits = 0) => (Number.isNaN(n) ? 'n/a' : n.toFixed(digits));
    const section = [
      '## Freshness',
      '',
      `Reproduce: \`${COMMAND}\` (options: \`-- --rate ${RATE} --seconds ${SECONDS}\`; with \`KAFKA_BROKERS\` and \`SCHEMA_REGISTRY_URL\` set it uses that stack).`,
      `Measured ${new Date().toISOString().slice(0, 10)} on ${cpu.length} × ${cpu[0]?.model.trim() ?? 'unknown CPU'}, ${(totalmem() / 2 ** 30).toFixed(1)} GiB RAM, Node ${process.version};`,
      `${stack.describe().split(' (logs')[0]}; 1-minute load average ${loadBefore} before, ${loadAfter} after.`,
      '',
      `From each POST's scheduled departure to the moment a read_committed consumer of \`webhooks.unique\` received it:`,
      `${RATE} signed deliveries/s (~1 KB, each a new webhook id), open loop, ${SECONDS} s, the first ${WARMUP_S} s left out;`,
      `\`hookledger ingest\` and \`hookledger process --only dedupe-router\` as child processes (LOG_LEVEL=warn), ${opts.partitions} partitions.`,
      '',
      '| | p50 ms | p99 ms | max ms | counted |',
      '|---|---:|---:|---:|---:|',
      `| POST → visible in webhooks.unique | ${fmt(percentile(latencies, 50))} | ${fmt(p99)} | ${fmt(latencies.at(-1) ?? Number.NaN)} | ${latencies.length} |`,
      `| the HTTP part (POST → 200) | ${fmt(http.p50Ms, 1)} | ${fmt(http.p99Ms, 1)} | ${fmt(http.maxMs, 1)} | ${http.ok} |`,
      '',
      `- Target: p99 ≤ 500 ms at 500 deliveries/s: **${RATE === 500 && p99 <= 500 ? 'met' : RATE === 500 ? 'not met' : 'not measured at 500/s'}**.`,
      `- Acknowledged ${http.ok} of ${total}; visible in webhooks.unique: ${watcher.seenAt.size}${
        Object.keys(http.failures).length ? `; non-200: ${JSON.stringify(http.failures)}` : ''
      }.`,
    ].join('\n');
    console.log(section);
    if (!opts['no-write']) writeSection('freshness', section);
  } finally {
    await Promise.all(children.map(stopChild));
    await bench?.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
