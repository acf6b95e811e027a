// `npm run bench:process`: the dedupe-router's throughput and CPU per event with exactly-once on,
// beside a bare kafkajs exactly-once pass-through of the same records, and the heap it holds per
// tracked id. Needs KAFKA_BROKERS and SCHEMA_REGISTRY_URL (e.g. from `hookstream stack`).
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { encodeDedupeDecision } from '../../processors/dedupe-router/dedupe-decision.js';
import { DedupeStore } from '../../processors/dedupe-router/dedupe-store.js';
import { dedupeRouterAppId, startDedupeRouter } from '../../processors/dedupe-router/main.js';
import { loadConfig } from '../../runtime/config.js';
import { withAdmin } from '../../runtime/kafka/admin.js';
import { createKafka } from '../../runtime/kafka/client.js';
import { ensureTopics } from '../../runtime/kafka/ensure-topics.js';
import { createSerde } from '../../schemas/serde.js';
import { topicCatalog, topicNames, valueSubject } from '../../schemas/topics.js';
import { generateLoad } from '../../test/integration/processors-load.js';
import { runPassThrough } from './process-passthrough.js';

const { values: opts } = parseArgs({
  options: {
    ids: { type: 'string', default: '60000' },
    retries: { type: 'string', default: '15000' },
    partitions: { type: 'string', default: '6' },
    'memory-ids': { type: 'string', default: '1000000' },
  },
});
const log = (message: string) => console.error(`bench:process ${message}`);

const brokers = (process.env.KAFKA_BROKERS ?? '').split(',').filter(Boolean);
const registryUrl = process.env.SCHEMA_REGISTRY_URL;
if (brokers.length === 0 || !registryUrl) {
  console.error('bench:process: set KAFKA_BROKERS and SCHEMA_REGISTRY_URL (a running stack)');
  process.exit(2);
}

const partitions = Number(opts.partitions);
const prefix = `bench-process-${randomBytes(3).toString('hex')}.`;
const names = topicNames(prefix);
const logger = pino({ level: 'warn' });
const kafka = createKafka({ brokers, clientId: 'bench-process', logger });

/** CPU seconds this process used while `run` ran, and its wall time. */
async function measured<T>(run: () => Promise<T>): Promise<{ result: T; cpuSeconds: number }> {
  const before = process.cpuUsage();
  const result = await run();
  const used = process.cpuUsage(before);
  return { result, cpuSeconds: (used.user + used.system) / 1e6 };
}

async function produceLoad(): Promise<number> {
  const specs = topicCatalog({
    prefix,
    bodyLimit: 1_048_576,
    dedupeWindowMs: 7 * 86_400_000,
    partitions,
    replicationFactor: 1,
  });
  specs.push({ ...specs.find((s) => s.name === names.unique)!, name: `${prefix}passthrough` });
  await withAdmin(kafka, (admin) => ensureTopics(admin, specs));
  const serde = createSerde({ registryUrl: registryUrl! });
  await serde.registerAll(prefix);
  const schemaId = await serde.latestSchemaId(valueSubject(names.raw));
  const load = generateLoad({
    ids: Number(opts.ids),
    retries: Number(opts.retries),
    startAt: Date.now() - 3_600_000,
  });
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  for (let i = 0; i < load.envelopes.length; i += 2_000) {
    const slice = load.envelopes.slice(i, i + 2_000);
    const messages = await Promise.all(
      slice.map(async (e) => ({
        key: e.webhookId,
        value: await serde.encode(schemaId, e),
        timestamp: String(e.receivedAt),
      })),
    );
    await producer.send({ topic: names.raw, messages, acks: -1 });
  }
  await producer.disconnect();
  return load.envelopes.length;
}

/**
 * Waits until the group committed every record; returns the steady-state window: from the first
 * commit seen to the last (start-up, group join and restore not counted), with its CPU.
 */
async function waitCaughtUp(
  groupId: string,
  total: number,
): Promise<{ records: number; seconds: number; cpuSeconds: number }> {
  return withAdmin(kafka, async (admin) => {
    let first: { at: number; cpu: NodeJS.CpuUsage; records: number } | undefined;
    for (;;) {
      const [committed] = await admin.fetchOffsets({ groupId, topics: [names.raw] });
      const sum = (committed?.partitions ?? []).reduce(
        (s, p) => s + (p.offset === '-1' ? 0 : Number(p.offset)),
        0,
      );
      if (first === undefined && sum > 0)
        first = { at: performance.now(), cpu: process.cpuUsage(), records: sum };
      if (first !== undefined && sum >= total) {
        const cpu = process.cpuUsage(first.cpu);
        return {
          records: total - first.records,
          seconds: (performance.now() - first.at) / 1000,
          cpuSeconds: (cpu.user + cpu.system) / 1e6,
        };
      }
      await new Promise((r) => setTimeout(r, 10));
    }
  });
}

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

async function main(): Promise<void> {
  log(`producing ${opts.ids} ids + ${opts.retries} retries to ${names.raw} (${partitions} partitions)`);
  const total = await produceLoad();

  log('bare kafkajs exactly-once pass-through…');
  const bare = await measured(() =>
    runPassThrough({
      kafka,
      input: names.raw,
      output: `${prefix}passthrough`,
      groupId: `${prefix}bench-passthrough`,
      expected: total,
      concurrency: partitions,
    }),
  );

  log('dedupe-router…');
  const config = loadConfig({ ...process.env, TOPIC_PREFIX: prefix, LOG_LEVEL: 'warn' });
  const router = await measured(async () => {
    const stage = await startDedupeRouter({
      config,
      logger,
      registry: new Registry(),
      concurrency: partitions,
    });
    const steady = await waitCaughtUp(dedupeRouterAppId(prefix), total);
    await stage.close();
    return steady;
  });
  const memory = heapPerTrackedId(Number(opts['memory-ids']));

  const bareRate = total / bare.result.seconds;
  const bareCpu = (bare.cpuSeconds / total) * 1e6;
  const steady = router.result;
  const routerRate = steady.records / steady.seconds;
  const routerCpu = (steady.cpuSeconds / steady.records) * 1e6;
  const routerCpuAll = (router.cpuSeconds / total) * 1e6;
  const rows = [
    ['', 'events/s', 'CPU µs/event (this process)'],
    ['bare kafkajs EOS pass-through', bareRate.toFixed(0), bareCpu.toFixed(1)],
    [
      'dedupe-router (exactly-once)',
      routerRate.toFixed(0),
      `${routerCpu.toFixed(1)} (${routerCpuAll.toFixed(1)} with start-up)`,
    ],
  ];
  console.log(
    `records: ${total} (${opts.ids} ids, ${opts.retries} retries), ${partitions} partitions, concurrency ${partitions}`,
  );
  for (const row of rows) console.log(row.map((c, i) => (i === 0 ? c.padEnd(32) : c.padStart(34))).join(''));
  console.log(
    `router CPU per event / pass-through CPU per event: ${(routerCpu / bareCpu).toFixed(2)}x (target <= 1.5x)`,
  );
  console.log(`router throughput: ${routerRate.toFixed(0)} events/s, first commit to last (target >= 20000)`);
  console.log(
    `heap per tracked id: ${memory.toFixed(1)} bytes (${opts['memory-ids']} ids restored; target <= 64)`,
  );
}

await main();
process.exit(0);
