// `npm run bench:router-cpu`: the dedupe-router's own per-event CPU, in this process, without Kafka or a
// JVM: the bench's load (Avro envelopes, ids and retries) through the runtime's RecordProcessing and
// StreamTask (decode, dedupe, route, encode, changelog, metrics folded at each commit), a registry
// answered by a small HTTP server in this process. The figure to compare steps of hot-path work
// with (`node --cpu-prof` on this shows where the time goes); `npm run bench:process` is the real one.
import { dedupeMetricEvents } from '../../processors/dedupe-router/metrics.js';
import { createSerde } from '../../schemas/serde.js';
import { topicNames } from '../../schemas/topics.js';
import { generateLoad } from '../../test/integration/processors-load.js';
import { benchRouterTopology, parseCpuPassArgs, rawRecords, runCpuPasses } from './cpu-passes.js';
import { localRegistry } from './local-registry.js';

const opts = parseCpuPassArgs();

async function main(): Promise<void> {
  const registry = await localRegistry();
  const serde = createSerde({ registryUrl: registry.url, clientId: 'bench-router-cpu' });
  const names = topicNames('');
  const topology = benchRouterTopology(serde, registry.idOf);
  const load = generateLoad({ ids: Number(opts.ids), retries: Number(opts.retries), startAt: Date.now() });
  const partitions = 6;
  const messages = await rawRecords(serde, registry.idOf, load, partitions);
  let deadLettered = 0;
  await runCpuPasses({
    what: 'router',
    topology,
    messages,
    partitions,
    metricEvents: dedupeMetricEvents,
    onSend: (record) => {
      if (record.topic === names.dlq) deadLettered++;
    },
    args: opts,
  });
  registry.close();
  // The load is all valid deliveries: a dead letter means the bench measured the wrong path.
  if (deadLettered > 0)
    throw new Error(
      `the router dead-lettered ${deadLettered} of the load's deliveries: it must route them all`,
    );
}

await main();
