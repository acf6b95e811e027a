// `npm run bench:state`: the dedupe state in memory against on disk (LMDB), in one run. A dedupe
// changelog of N ids is written to a fresh topic of the bench stack; then, each measured in this process:
// a restart with the state in memory (a full restore of the changelog, as every start and takeover does
// today), the first start on disk (the same full restore, into LMDB, then a checkpoint), and a restart on
// disk (open the directory, read from the checkpoint to the end); heap used after each; then the
// store's share of the router's work (decide, record, commit every 1,000) in memory and on disk over the
// same N ids. Prints a Markdown table and one JSON line.
// Uses KAFKA_BROKERS when set, else starts a local stack of its own (tools/bench/bench-stack.ts).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { encodeDedupeDecision } from '../../processors/dedupe-router/dedupe-decision.js';
import { DedupeStore, IdSetBacking } from '../../processors/dedupe-router/dedupe-store.js';
import { ensureTopics } from '../../runtime/kafka/ensure-topics.js';
import { connect, createProducer, disconnect, type KafkaSettings } from '../../runtime/kafka/rdkafka.js';
import { createTopicAdmin } from '../../runtime/kafka/rdkafka-admin.js';
import { readToEnd } from '../../runtime/kafka/read-to-end.js';
import { deliverAll, type OutRecord, routeDeliveryReports } from '../../runtime/kafka/write-records.js';
import { TaskStateDir } from '../../runtime/streams/state-dir.js';
import { RestoredRecord } from '../../runtime/streams/store.js';
import { startBenchStack } from './bench-stack.js';
import { heapUsed, progressLog, routeThrough } from './state-store-loop.js';

const { values: opts } = parseArgs({
  options: {
    ids: { type: 'string', default: '1000000' },
    partitions: { type: 'string', default: '6' },
    /** Deliveries through the store's share of the router's work (a third of them retries). */
    deliveries: { type: 'string', default: '300000' },
  },
});

const WEEK = 7 * 86_400_000;
const log = progressLog('bench:state');

async function writeChangelog(settings: KafkaSettings, topic: string, ids: number, partitions: number) {
  const admin = createTopicAdmin(settings);
  try {
    await ensureTopics(admin, [{ name: topic, partitions, replicationFactor: 1, configs: {} }]);
  } finally {
    await admin.close();
  }
  const producer = await connect(
    createProducer(settings, { 'enable.idempotence': true, acks: -1, 'linger.ms': 20 }, 'bench-state'),
  );
  try {
    routeDeliveryReports(producer);
    producer.setPollInBackground(true);
    const now = Date.now();
    const value = encodeDedupeDecision({ kind: 'routed', seenAt: now });
    for (let from = 0; from < ids; from += 100_000) {
      const chunk: OutRecord[] = [];
      for (let i = from; i < Math.min(ids, from + 100_000); i++)
        chunk.push({ key: `bench/wh_${i}`, value, partition: i % partitions, timestamp: now });
      await deliverAll(producer, topic, chunk);
    }
  } finally {
    await disconnect(producer);
  }
}

/** Reads the changelog into one store per partition (from each partition's `from`), as a restore does. */
async function restoreInto(
  settings: KafkaSettings,
  topic: string,
  stores: DedupeStore[],
  from: (partition: number) => bigint | undefined = () => undefined,
) {
  const started = performance.now();
  let records = 0;
  const { ends } = await readToEnd({
    settings,
    topic,
    partitions: stores.map((_, partition) => ({ partition })),
    startAt: (partition) => from(partition),
    batchSize: 10_000,
    component: 'bench-restore',
    onRecord: ({ partition, key, value, timestamp }) => {
      stores[partition]!.restore(new RestoredRecord(key, value, timestamp));
      records++;
    },
  });
  for (const store of stores) store.restored(Date.now());
  return { seconds: (performance.now() - started) / 1000, records, ends };
}

async function main(): Promise<void> {
  const ids = Number(opts.ids);
  const partitions = Number(opts.partitions);
  const deliveries = Number(opts.deliveries);
  const bench = await startBenchStack({ jvmTools: false });
  const settings = bench.kafka('bench-state', pino({ level: 'warn' }));
  const topic = `bench-state-${randomBytes(3).toString('hex')}.dedupe-changelog`;
  const root = mkdtempSync(join(tmpdir(), 'hookledger-bench-state-'));
  try {
    log(`writing ${ids} changelog records to ${topic} (${partitions} partitions)`);
    await writeChangelog(settings, topic, ids, partitions);
    const range = Array.from({ length: partitions }, (_, p) => p);

    log('restart in memory: a full restore');
    let before = heapUsed();
    let memory: DedupeStore[] | undefined = range.map(() => new DedupeStore(WEEK));
    const inMemory = await restoreInto(settings, topic, memory);
    const memoryHeap = heapUsed() - before;
    const memoryRate = routeThrough(memory[0]!, deliveries, ids);
    memory = undefined;

    log('first start on disk: a full restore into LMDB, then a checkpoint');
    const open = () =>
      range.map(
        (partition) => new TaskStateDir({ root, appId: 'bench', instanceId: 'bench', topic, partition }),
      );
    let dirs = open();
    before = heapUsed();
    const firstStart = await restoreInto(
      settings,
      topic,
      dirs.map((dir) => new DedupeStore(WEEK, IdSetBacking.of(dir))),
    );
    for (const [partition, dir] of dirs.entries())
      dir.writeCheckpoint({ offsets: { [topic]: String(firstStart.ends.get(partition)) }, streamTime: 0 });
    await Promise.all(dirs.map((dir) => dir.close()));

    log('restart on disk: open, read from the checkpoint to the end');
    before = heapUsed();
    const restartStarted = performance.now();
    dirs = open();
    const onDisk = dirs.map((dir) => new DedupeStore(WEEK, IdSetBacking.of(dir)));
    const restart = await restoreInto(settings, topic, onDisk, (p) =>
      BigInt(dirs[p]!.checkpoint!.offsets[topic]!),
    );
    const restartSeconds = (performance.now() - restartStarted) / 1000;
    const diskHeap = heapUsed() - before;
    const held = onDisk.reduce((sum, store) => sum + store.size, 0);
    const diskBytes = dirs.reduce((sum, dir) => sum + dir.sizeOnDisk(), 0);
    const diskRate = routeThrough(onDisk[0]!, deliveries, ids);
    await Promise.all(dirs.map((dir) => dir.close()));

    const mb = (bytes: number) => (bytes / 1e6).toFixed(0);
    const rows = [
      '| | restart (s) | records read | heap after (MB) | store share of routing (deliveries/s) |',
      '|---|---:|---:|---:|---:|',
      `| in memory | ${inMemory.seconds.toFixed(2)} | ${inMemory.records} | ${mb(memoryHeap)} | ${memoryRate.toFixed(0)} |`,
      `| on disk, first start | ${firstStart.seconds.toFixed(2)} | ${firstStart.records} | | |`,
      `| on disk, restart | ${restartSeconds.toFixed(2)} | ${restart.records} | ${mb(diskHeap)} | ${diskRate.toFixed(0)} |`,
    ];
    process.stdout.write(
      `${rows.join('\n')}\n\non disk: ${held} ids in ${mb(diskBytes)} MB (${(diskBytes / held).toFixed(0)} bytes an id)\n`,
    );
    process.stdout.write(
      `${JSON.stringify({ ids, partitions, deliveries, memory: { restartSeconds: inMemory.seconds, heapBytes: memoryHeap, deliveriesPerSecond: memoryRate }, disk: { firstStartSeconds: firstStart.seconds, restartSeconds, restartRecords: restart.records, heapBytes: diskHeap, deliveriesPerSecond: diskRate, bytesOnDisk: diskBytes } })}\n`,
    );
  } finally {
    rmSync(root, { recursive: true, force: true });
    await bench.stop();
  }
}

await main();
