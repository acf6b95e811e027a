// `npm run bench:enrich`: how many fetches per second one enrich instance sustains against a local
// GraphQL endpoint (the simulator's, answering at once), end to end: Minimal energy-switch events
// already in entity.energy-switch, each fetched, routed and committed exactly-once as a fetched event.
// Writes docs/benchmarks.md's enrich section with the command that reproduces it.
import { randomBytes } from 'node:crypto';
import { cpus } from 'node:os';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import type { EnergySwitchEvent } from '../../processors/dedupe-router/entity-event.js';
import { startEnrich } from '../../processors/enrich/main.js';
import { loadConfig } from '../../runtime/config.js';
import { withAdmin } from '../../runtime/kafka/admin.js';
import { ensureTopics } from '../../runtime/kafka/ensure-topics.js';
import { type OutRecord, writeRecords } from '../../runtime/kafka/write-records.js';
import { createSerde } from '../../schemas/serde.js';
import { topicNames, valueSubject } from '../../schemas/topics.js';
import { serveGraphqlApi } from '../simulate/graphql-api.js';
import { startBenchStack } from './bench-stack.js';
import { benchTopicCatalog } from './bench-topics.js';
import { writeSection } from './report-section.js';

const COMMAND = 'npm run bench:enrich';
const { values: opts } = parseArgs({
  options: {
    events: { type: 'string', default: '6000' },
    concurrency: { type: 'string', default: '8,32' },
    partitions: { type: 'string', default: '6' },
    'no-write': { type: 'boolean', default: false },
  },
});
const EVENTS = Number(opts.events);
const log = (message: string) => console.error(`bench:enrich ${message}`);

function minimalEvent(n: number, api: string): EnergySwitchEvent {
  const id = `es_${n}`;
  const nulls = {
    user: null,
    userSwitchReferenceId: null,
    postcode: null,
    provider: null,
    tariffName: null,
    projectedSpend: null,
    savings: null,
    fuelType: null,
    fuelsSwitched: null,
    commission: null,
  };
  return {
    webhookId: `wh_bench_${n}`,
    source: 'bench',
    ingestId: `ingest-${n}`,
    trigger: 'EnergySwitchUpdated',
    entity: 'EnergySwitch',
    action: 'Updated',
    deleted: false,
    occurredAt: Date.now() - 60_000,
    receivedAt: Date.now() - 60_000,
    entityId: id,
    queryVariables: JSON.stringify({ id }),
    fields: ['id', 'date'],
    data: JSON.stringify({ id, date: '2026-11-20T10:59:00Z' }),
    date: '2026-11-20T10:59:00Z',
    ...nulls,
    queryApi: api,
    origin: 'delivery',
  };
}

function fullRecord(id: string) {
  return {
    __typename: 'EnergySwitch',
    id,
    date: '2026-11-20T10:15:00Z',
    user: { id: 'usr_1', tenantId: null },
    userSwitchReferenceId: `REF-${id}`,
    postcode: 'SW1A 1AA',
    provider: { code: 'ACME', name: 'Acme Energy Ltd' },
    tariffName: 'Acme Flex 12M',
    projectedSpend: { currency: 'GBP', amount: 1234.5 },
    savings: { currency: 'GBP', amount: 199.9 },
    fuelType: 'dualFuel',
    fuelsSwitched: 2,
    commission: {
      fuelsWaitingForUpdate: 0,
      fuelsWithSwitchTerminated: 0,
      fuelsWithCommissionExpected: 2,
      fuelsWithCommissionReceived: 0,
      statusDate: '2026-11-19T09:00:00Z',
      status: 'commissionExpected',
    },
  };
}

interface Run {
  concurrency: number;
  fetchesPerSecond: number;
  seconds: number;
  requests: number;
}

async function main(): Promise<void> {
  const bench = await startBenchStack();
  const runs: Run[] = [];
  const api = await serveGraphqlApi({ port: 0, failureRate: 0, seed: 'bench' });
  try {
    for (let n = 0; n < EVENTS; n++) api.record(`es_${n}`, fullRecord(`es_${n}`));
    for (const concurrency of opts.concurrency.split(',').map(Number)) {
      const prefix = `bench-enrich-${randomBytes(3).toString('hex')}.`;
      const names = topicNames(prefix);
      await withAdmin(bench.kafka('bench-topics'), (admin) =>
        ensureTopics(admin, benchTopicCatalog(prefix, Number(opts.partitions))),
      );
      const serde = createSerde(bench.registry('bench-enrich'));
      await serde.registerAll(prefix);
      const source = names.entity('energy-switch');
      const schemaId = await serde.latestSchemaId(valueSubject(source));
      const records: OutRecord[] = [];
      for (let n = 0; n < EVENTS; n++)
        records.push({
          key: Buffer.from(`bench/es_${n}`),
          value: await serde.encode(schemaId, minimalEvent(n, api.url)),
        });
      await writeRecords(bench.kafka('bench-prefill'), source, records);
      const origin = new URL(api.url).origin;
      const config = loadConfig({
        ...process.env,
        ...bench.env,
        TOPIC_PREFIX: prefix,
        PROCESSOR_PORT: '0',
        ENRICH: 'true',
        ENRICH_ALLOWED_ENDPOINTS: origin,
        ENRICH_CONCURRENCY: String(concurrency),
        ENRICH_RATE_LIMIT: '1000000',
        LOG_LEVEL: 'silent',
      });
      const registry = new Registry();
      const requestsBefore = api.stats.requests;
      const started = Date.now();
      const stage = await startEnrich({ config, logger: pino({ level: 'silent' }), registry });
      let firstAt: number | undefined;
      for (;;) {
        const metric = await registry.getSingleMetric('hookledger_enrich_events_total')?.get();
        const fetched = metric?.values.find((v) => v.labels.outcome === 'fetched')?.value ?? 0;
        if (fetched > 0 && firstAt === undefined) firstAt = Date.now();
        if (fetched >= EVENTS) break;
        if (Date.now() - started > 300_000)
          throw new Error(`only ${fetched} of ${EVENTS} fetched in 5 minutes`);
        await new Promise((r) => setTimeout(r, 50));
      }
      const seconds = (Date.now() - firstAt!) / 1000;
      await stage.close();
      const run = {
        concurrency,
        seconds,
        fetchesPerSecond: Math.round(EVENTS / seconds),
        requests: api.stats.requests - requestsBefore,
      };
      log(JSON.stringify(run));
      runs.push(run);
    }
  } finally {
    await api.close();
    await bench.stop();
  }
  const rows = runs
    .map(
      (r) =>
        `| ${r.concurrency} | ${EVENTS} | ${r.requests} | ${r.seconds.toFixed(1)} s | **${r.fetchesPerSecond}** |`,
    )
    .join('\n');
  const section = `## Enrich: fetches per second, one instance

Reproduce: \`${COMMAND}\` (options: \`-- --events 6000 --concurrency 8,32 --partitions 6\`; with \`KAFKA_BROKERS\`
and \`SCHEMA_REGISTRY_URL\` set it uses that stack). ${new Date().toISOString().slice(0, 10)}, ${cpus().length} cores
(${cpus()[0]?.model ?? 'unknown'}), a local broker and registry on the same machine.

${EVENTS} Minimal energy-switch events already in \`entity.energy-switch\`, read by one enrich instance; each is
POSTed to the simulator's \`/v1/graphql\` (in the benchmark's process, answering at once, no rate limit), the answer
routed and written back as a fetched event, exactly-once (commit every 100 ms). From the first fetched event
to the last:

| ENRICH_CONCURRENCY | events | requests | time | fetches/s |
|---|---|---|---|---|
${rows}

What bounds it here is the machine, not the endpoint: the stage, the endpoint, the broker and the registry
share ${cpus().length} cores. A real endpoint's latency L caps one instance near ENRICH_CONCURRENCY / L
(8 in flight at 50 ms: 160/s), and its rate limit below that; more instances (one per partition at most)
multiply it.`;
  console.log(JSON.stringify(runs));
  if (!opts['no-write']) writeSection('enrich', section);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
