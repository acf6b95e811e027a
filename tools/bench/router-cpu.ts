// `npm run bench:router-cpu`: the dedupe-router's own per-event CPU, in this process, without Kafka or a
// JVM: the bench's load (Avro envelopes, ids and retries) through the runtime's RecordProcessing and
// StreamTask (decode, dedupe, route, encode, changelog, metrics folded at each commit), a registry
// answered by a small HTTP server in this process. The figure to compare steps of hot-path work
// with (`node --cpu-prof` on this shows where the time goes); `npm run bench:process` is the real one.
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { dedupeMetricEvents } from '../../processors/dedupe-router/metrics.js';
import type { RawInput } from '../../processors/dedupe-router/poison.js';
import { dedupeTopology, ROUTER_OUTPUTS } from '../../processors/dedupe-router/topology.js';
import type { OutRecord } from '../../runtime/streams/eos-producer.js';
import { createStreamMetrics } from '../../runtime/streams/metrics.js';
import { RecordProcessing } from '../../runtime/streams/record-processing.js';
import type { ConsumedMessage } from '../../runtime/streams/stream-clients.js';
import { StreamTask } from '../../runtime/streams/stream-task.js';
import type { TransactionCycle } from '../../runtime/streams/transaction-cycle.js';
import { createSerde } from '../../schemas/serde.js';
import { topicNames, valueSubject } from '../../schemas/topics.js';
import { generateLoad } from '../../test/integration/processors-load.js';
import { type CpuPass, hrUs, parseCpuPassArgs, reportPasses, timePass } from './cpu-passes.js';
import { localRegistry } from './local-registry.js';

const opts = parseCpuPassArgs();

async function main(): Promise<void> {
  const registry = await localRegistry();
  const serde = createSerde({ registryUrl: registry.url, clientId: 'bench-router-cpu' });
  const names = topicNames('');
  const schemaIds = new Map<string, number>();
  for (const logical of ROUTER_OUTPUTS) schemaIds.set(logical, registry.idOf.get(valueSubject(logical))!);
  const topology = dedupeTopology({
    rawTopic: names.raw,
    changelogTopic: names.dedupeChangelog,
    topicOf: (logical) => logical,
    schemaIds,
    serde,
    windowMs: 7 * 86_400_000,
  });
  const rawId = registry.idOf.get(valueSubject(names.raw))!;
  const load = generateLoad({ ids: Number(opts.ids), retries: Number(opts.retries), startAt: Date.now() });
  const partitions = 6;
  const messages: { partition: number; message: ConsumedMessage }[] = [];
  const offsets = new Array<number>(partitions).fill(0);
  for (const [i, envelope] of load.envelopes.entries()) {
    const partition = i % partitions;
    messages.push({
      partition,
      message: {
        topic: names.raw,
        partition,
        offset: offsets[partition]!++,
        key: Buffer.from(envelope.webhookId),
        value: await serde.encode(rawId, envelope),
        timestamp: envelope.receivedAt,
        size: 0,
      } as unknown as ConsumedMessage,
    });
  }
  const logger = pino({ level: 'warn' });
  const commitRecords = Number(opts['commit-records']);
  const passes: CpuPass[] = [];
  const hrFromUs = hrUs();
  for (let pass = 0; pass < Number(opts.passes); pass++) {
    const metrics = createStreamMetrics({
      app: 'bench-router-cpu',
      registry: new Registry(),
      events: dedupeMetricEvents(new Registry()),
    });
    let outputs = 0;
    let deadLettered = 0;
    let inTransaction = false;
    const cycle = {
      begin: async () => {
        inTransaction = true;
      },
      counted: () => undefined,
      get inTransaction() {
        return inTransaction;
      },
      send: (record: OutRecord) => {
        outputs++;
        if (record.topic === names.dlq) deadLettered++;
      },
    } as unknown as TransactionCycle<RawInput>;
    const processing = new RecordProcessing(topology, new Map(), cycle);
    const port = { pause: () => undefined, resume: () => undefined };
    const source = topology.sources[0]!;
    const tasks = Array.from({ length: partitions }, (_, partition) => {
      const task = new StreamTask<RawInput>({ topology, source, partition, port, logger });
      task.machine.transitionTo('restoring');
      task.finishRestore();
      task.machine.transitionTo('running');
      return task;
    });
    const commit = () => {
      for (const task of tasks) {
        if (!task.dirty) continue;
        for (const { record } of task.takeChangelog()) {
          Buffer.from(record.key, 'utf8');
          outputs++;
        }
        const records = task.position.records;
        task.committed(metrics.instrument);
        metrics.instrument('stream.batch', { topic: task.topic }, records);
      }
      inTransaction = false;
    };
    passes.push(
      await timePass(pass, messages.length, async () => {
        let inBatch = 0;
        for (const { partition, message } of messages) {
          await processing.process(tasks[partition]!, message);
          if (++inBatch >= commitRecords) {
            commit();
            inBatch = 0;
          }
        }
        if (inTransaction) commit();
        return outputs;
      }),
    );
    // The load is all valid deliveries: a dead letter means the bench measures the wrong path.
    if (deadLettered > 0)
      throw new Error(
        `the router dead-lettered ${deadLettered} of the load's deliveries: it must route them all`,
      );
  }
  const hrToUs = hrUs();
  registry.close();
  reportPasses('router', messages.length, passes, { json: opts.json, hrFromUs, hrToUs });
}

await main();
