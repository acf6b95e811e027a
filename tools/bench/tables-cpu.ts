// `npm run bench:tables-cpu`: the tables stage's own per-event CPU, in this process, without Kafka or a
// JVM: the bench's load routed once by the dedupe-router's topology (its entity streams' Avro records,
// keys and partitions as the router wrote them), then, pass after pass, the five table streams through the
// runtime's RecordProcessing and StreamTask (decode, merge, `.latest` encode, merge changelog, metrics
// folded at each commit), a registry answered by a small HTTP server in this process. The figure to
// compare steps of hot-path work with (`node --cpu-prof` on this shows where the time goes);
// `npm run bench:process -- --tables-only` is the real one.
import { pino } from 'pino';
import { Registry } from 'prom-client';
import type { RawInput } from '../../processors/dedupe-router/poison.js';
import { dedupeTopology, ROUTER_OUTPUTS } from '../../processors/dedupe-router/topology.js';
import { tablesMetricEvents } from '../../processors/tables/metrics.js';
import type { EntityInput } from '../../processors/tables/table-processor.js';
import { type TableTopic, tablesTopology } from '../../processors/tables/topology.js';
import type { OutRecord } from '../../runtime/streams/eos-producer.js';
import { createStreamMetrics } from '../../runtime/streams/metrics.js';
import { RecordProcessing } from '../../runtime/streams/record-processing.js';
import type { ConsumedMessage } from '../../runtime/streams/stream-clients.js';
import { StreamTask } from '../../runtime/streams/stream-task.js';
import type { Topology } from '../../runtime/streams/topology.js';
import type { TransactionCycle } from '../../runtime/streams/transaction-cycle.js';
import { createSerde, type Serde } from '../../schemas/serde.js';
import { TABLE_STREAMS, topicNames, valueSubject } from '../../schemas/topics.js';
import { generateLoad } from '../../test/integration/processors-load.js';
import { type CpuPass, hrUs, parseCpuPassArgs, reportPasses, timePass } from './cpu-passes.js';
import { localRegistry } from './local-registry.js';

const opts = parseCpuPassArgs();

const PARTITIONS = 6;
const names = topicNames('');

/** A cycle that counts what is sent and commits nothing: the bench's stand-in for the producer. */
function countingCycle<V>(onSend: (record: OutRecord) => void) {
  let inTransaction = false;
  const cycle = {
    begin: async () => {
      inTransaction = true;
    },
    counted: () => undefined,
    get inTransaction() {
      return inTransaction;
    },
    send: (record: OutRecord) => onSend(record),
  } as unknown as TransactionCycle<V>;
  return { cycle, ended: () => (inTransaction = false) };
}

/** One running task per (topic, partition) of a topology with one store per task. */
function runningTasks<V>(topology: Topology<V>): Map<string, StreamTask<V>> {
  const logger = pino({ level: 'warn' });
  const port = { pause: () => undefined, resume: () => undefined };
  const tasks = new Map<string, StreamTask<V>>();
  for (const source of topology.sources) {
    for (let partition = 0; partition < PARTITIONS; partition++) {
      const task = new StreamTask<V>({ topology, source, partition, port, logger });
      task.machine.transitionTo('restoring');
      task.finishRestore();
      task.machine.transitionTo('running');
      tasks.set(`${source.topic}/${partition}`, task);
    }
  }
  return tasks;
}

/** The FNV-1a hash of the key, for a stable partition per key (librdkafka's own murmur2 is not needed). */
function partitionOf(key: Buffer): number {
  let hash = 0x811c9dc5;
  for (const byte of key) hash = Math.imul(hash ^ byte, 0x01000193) >>> 0;
  return hash % PARTITIONS;
}

/** The bench's load routed once: the records the router writes to the five table streams, in order. */
async function entityStreams(serde: Serde, idOf: Map<string, number>): Promise<ConsumedMessage[]> {
  const schemaIds = new Map<string, number>();
  for (const logical of ROUTER_OUTPUTS) schemaIds.set(logical, idOf.get(valueSubject(logical))!);
  const topology = dedupeTopology({
    rawTopic: names.raw,
    changelogTopic: names.dedupeChangelog,
    topicOf: (logical) => logical,
    schemaIds,
    serde,
    windowMs: 7 * 86_400_000,
  });
  const rawId = idOf.get(valueSubject(names.raw))!;
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
  const tasks = runningTasks(topology);
  for (const [i, envelope] of load.envelopes.entries()) {
    const partition = i % PARTITIONS;
    await processing.process(tasks.get(`${names.raw}/${partition}`)!, {
      topic: names.raw,
      partition,
      offset: i,
      key: Buffer.from(envelope.webhookId),
      value: await serde.encode(rawId, envelope),
      timestamp: envelope.receivedAt,
      size: 0,
    } as unknown as ConsumedMessage);
  }
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
  const commitRecords = Number(opts['commit-records']);
  const passes: CpuPass[] = [];
  const hrFromUs = hrUs();
  for (let pass = 0; pass < Number(opts.passes); pass++) {
    const metrics = createStreamMetrics({
      app: 'bench-tables-cpu',
      registry: new Registry(),
      events: tablesMetricEvents(new Registry()),
    });
    let outputs = 0;
    const { cycle, ended } = countingCycle<EntityInput | null>(() => {
      outputs++;
    });
    const processing = new RecordProcessing(topology, new Map(), cycle);
    const tasks = runningTasks(topology);
    const commit = () => {
      for (const task of tasks.values()) {
        if (!task.dirty) continue;
        for (const { record } of task.takeChangelog()) {
          Buffer.from(record.key, 'utf8');
          outputs++;
        }
        const records = task.position.records;
        task.committed(metrics.instrument);
        metrics.instrument('stream.batch', { topic: task.topic }, records);
      }
      ended();
    };
    passes.push(
      await timePass(pass, messages.length, async () => {
        let inBatch = 0;
        for (const message of messages) {
          await processing.process(tasks.get(`${message.topic}/${message.partition}`)!, message);
          if (++inBatch >= commitRecords) {
            commit();
            inBatch = 0;
          }
        }
        commit();
        return outputs;
      }),
    );
  }
  const hrToUs = hrUs();
  registry.close();
  reportPasses('tables', messages.length, passes, { json: opts.json, hrFromUs, hrToUs });
}

await main();
