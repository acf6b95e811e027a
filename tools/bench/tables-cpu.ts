// `npm run bench:tables-cpu`: the tables stage's own per-event CPU, in this process, without Kafka or a
// JVM: the bench's load routed once by the dedupe-router's topology (its entity streams' Avro records,
// keys and partitions as the router wrote them), then, pass after pass, the five table streams through the
// runtime's RecordProcessing and StreamTask (decode, merge, `.latest` encode, merge changelog, metrics
// folded at each commit), a registry answered by a small HTTP server in this process. The figure to
// compare steps of hot-path work with (`node --cpu-prof` on this shows where the time goes);
// `npm run bench:process -- --tables-only` is the real one.
import type { RawInput } from '../../processors/dedupe-router/poison.js';
import { tablesMetricEvents } from '../../processors/tables/metrics.js';
import { type TableTopic, tablesTopology } from '../../processors/tables/topology.js';
import { RecordProcessing } from '../../runtime/streams/record-processing.js';
import type { ConsumedMessage } from '../../runtime/streams/stream-clients.js';
import { createSerde, type Serde } from '../../schemas/serde.js';
import { TABLE_STREAMS, topicNames, valueSubject } from '../../schemas/topics.js';
import { generateLoad } from '../../test/integration/processors-load.js';
import {
  benchRouterTopology,
  countingCycle,
  parseCpuPassArgs,
  rawRecords,
  runCpuPasses,
  runningTasks,
} from './cpu-passes.js';
import { localRegistry } from './local-registry.js';

const opts = parseCpuPassArgs();

const PARTITIONS = 6;
const names = topicNames('');

/** The FNV-1a hash of the key, for a stable partition per key (librdkafka's own murmur2 is not needed). */
function partitionOf(key: Buffer): number {
  let hash = 0x811c9dc5;
  for (const byte of key) hash = Math.imul(hash ^ byte, 0x01000193) >>> 0;
  return hash % PARTITIONS;
}

/** The bench's load routed once: the records the router writes to the five table streams, in order. */
async function entityStreams(serde: Serde, idOf: Map<string, number>): Promise<ConsumedMessage[]> {
  const topology = benchRouterTopology(serde, idOf);
  const ids = Number(opts.ids);
  const retries = Number(opts.retries);
  // Received (1 ms apart) up to now, not ahead of this process's clock: a record stamped in the future takes
  // the runtime's warning path, which the stage does not take live.
  const load = generateLoad({ ids, retries, startAt: Date.now() - (ids + retries) });
  const tableTopics = new Set<string>(TABLE_STREAMS.map((s) => names.entity(s)));
  const out: ConsumedMessage[] = [];
  const offsets = new Map<string, number>();
  const { cycle } = countingCycle<RawInput>((record) => {
    if (!tableTopics.has(record.topic) || record.key === null) return;
    const partition = record.partition ?? partitionOf(record.key);
    const at = `${record.topic}/${partition}`;
    const offset = offsets.get(at) ?? 0;
    offsets.set(at, offset + 1);
    // The router's output buffers are reused by its writer: copied, as the broker would hand them back.
    out.push({
      topic: record.topic,
      partition,
      offset,
      key: Buffer.from(record.key),
      value: record.value === null ? null : Buffer.from(record.value),
      timestamp: record.timestamp,
      size: 0,
    } as unknown as ConsumedMessage);
  });
  const processing = new RecordProcessing(topology, new Map(), cycle);
  const tasks = runningTasks(topology, PARTITIONS);
  for (const record of await rawRecords(serde, idOf, load, PARTITIONS))
    await processing.process(tasks.get(`${record.topic}/${record.partition}`)!, record);
  return out;
}

async function main(): Promise<void> {
  const registry = await localRegistry();
  const serde = createSerde({ registryUrl: registry.url, clientId: 'bench-tables-cpu' });
  const messages = await entityStreams(serde, registry.idOf);
  if (messages.length === 0) throw new Error('the router wrote nothing to the table streams');
  const tables: TableTopic[] = TABLE_STREAMS.map((stream) => ({
    stream,
    source: names.entity(stream),
    latest: names.latest(stream),
    changelog: names.mergeChangelog(stream),
    schemaId: registry.idOf.get(valueSubject(names.latest(stream)))!,
  }));
  const topology = tablesTopology({ tables, serde, windowMs: 7 * 86_400_000 });
  await runCpuPasses({
    what: 'tables',
    topology,
    messages,
    partitions: PARTITIONS,
    metricEvents: tablesMetricEvents,
    args: opts,
  });
  registry.close();
}

await main();
