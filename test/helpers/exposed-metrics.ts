// The series hookledger's services expose, read from their real registries built in-process: ingest's
// app (buildApp, with its scrape-time gauges as ingest/main.ts adds them) and the processors' registry
// as processors/main.ts and each stage compose it. Alert and dashboard tests check names against it.
import { pino } from 'pino';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { buildApp } from '../../ingest/app.js';
import { createIngestMetrics, type IngestMetrics } from '../../ingest/metrics.js';
import { buildOpsApp } from '../../ingest/ops-app.js';
import { parseSources } from '../../ingest/sources.js';
import { DEDUPE_ROUTER } from '../../processors/dedupe-router/main.js';
import { dedupeMetricEvents } from '../../processors/dedupe-router/metrics.js';
import { ENRICH } from '../../processors/enrich/main.js';
import { enrichMetricEvents } from '../../processors/enrich/metrics.js';
import { TABLES } from '../../processors/tables/main.js';
import { tablesMetricEvents } from '../../processors/tables/metrics.js';
import { createStreamMetrics } from '../../runtime/streams/metrics.js';

/** Exposed series (as PromQL names them: a histogram's _bucket, _sum, _count) → the labels each may carry. */
export type ExposedSeries = ReadonlyMap<string, ReadonlySet<string>>;

/** Labels Prometheus adds to every scraped series (the job names are deploy/prometheus/prometheus.yml's). */
export const SCRAPE_LABELS = ['job', 'instance'] as const;

/** Series Prometheus makes itself for each scrape target. */
const SCRAPE_SERIES = ['up', 'scrape_duration_seconds', 'scrape_samples_scraped'];

export interface Exposition {
  ingest: string;
  processors: string;
  series: ExposedSeries;
}

/** Builds both services' registries and reads their /metrics text. */
export async function exposition(): Promise<Exposition> {
  const ingest = await ingestExposition();
  const processors = await processorsExposition();
  const series = new Map<string, Set<string>>();
  for (const { text, registry } of [ingest, processors]) {
    for (const [name, labels] of seriesOf(text, registry)) series.set(name, labels);
  }
  for (const name of SCRAPE_SERIES) series.set(name, new Set(SCRAPE_LABELS));
  return { ingest: ingest.text, processors: processors.text, series };
}

async function ingestExposition(): Promise<{ text: string; registry: Registry }> {
  const metrics: IngestMetrics = createIngestMetrics();
  metrics.watch({ pendingBytes: () => 0, ready: () => true });
  const deps = {
    sources: parseSources(
      JSON.stringify({ energy: { keys: { k1: 'exposition-key-0123456789abcdef0123456789' } } }),
    ),
    store: { ready: true, store: async () => {} },
    encoder: { ready: true, encode: async () => Buffer.alloc(0) },
    logger: pino({ level: 'silent' }),
    metrics,
  };
  // The webhook app registers its own series (the failing-id list); the ops app serves them all.
  const app = await buildApp(deps);
  const ops = await buildOpsApp(deps);
  try {
    const response = await ops.inject({ method: 'GET', url: '/metrics' });
    return { text: response.body, registry: metrics.registry };
  } finally {
    await app.close();
    await ops.close();
  }
}

async function processorsExposition(): Promise<{ text: string; registry: Registry }> {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'hookledger_process_' });
  createStreamMetrics({ app: DEDUPE_ROUTER, registry, events: dedupeMetricEvents(registry) });
  createStreamMetrics({ app: TABLES, registry, events: tablesMetricEvents(registry) });
  createStreamMetrics({ app: ENRICH, registry, events: enrichMetricEvents(registry) });
  return { text: await registry.metrics(), registry };
}

/** The series names a `# TYPE` line stands for, each with its metric's label names (from the registry). */
function seriesOf(text: string, registry: Registry): Map<string, Set<string>> {
  const found = new Map<string, Set<string>>();
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    const metric = registry.getSingleMetric(name!);
    // prom-client keeps a metric's label names on it, though its typings do not declare them.
    const labelNames = (metric as unknown as { labelNames?: string[] } | undefined)?.labelNames ?? [];
    const labels = new Set([...labelNames, ...SCRAPE_LABELS]);
    if (type === 'histogram') {
      found.set(`${name}_bucket`, new Set([...labels, 'le']));
      found.set(`${name}_sum`, labels);
      found.set(`${name}_count`, labels);
    } else if (type === 'summary') {
      found.set(name!, new Set([...labels, 'quantile']));
      found.set(`${name}_sum`, labels);
      found.set(`${name}_count`, labels);
    } else {
      found.set(name!, labels);
    }
  }
  return found;
}

/** Metric names a PromQL expression reads: identifiers not followed by `(` (functions) nor inside braces or quotes. */
export function metricNamesIn(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""') // label values and strings
    .replace(/\{[^}]*\}/g, '{}') // label matchers
    .replace(/\[[^\]]*\]/g, '[]'); // ranges
  const names = new Set<string>();
  for (const match of stripped.matchAll(/(?<![A-Za-z0-9_:.])[A-Za-z_:][A-Za-z0-9_:]*/g)) {
    const word = match[0];
    const after = stripped.slice(match.index! + word.length).trimStart();
    const before = stripped.slice(0, match.index!).trimEnd();
    if (after.startsWith('(')) continue; // a function or aggregation
    if (PROMQL_WORDS.has(word)) continue;
    // `by (source, le)` and `without (…)` list labels, not metrics.
    if (/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*$/.test(before)) continue;
    if (/^\d/.test(word)) continue;
    names.add(word);
  }
  return [...names];
}

/** Keywords, and aggregations (`sum by (x) (…)` puts a keyword, not `(`, after the name). */
const PROMQL_WORDS = new Set([
  'sum',
  'avg',
  'min',
  'max',
  'count',
  'group',
  'stddev',
  'stdvar',
  'topk',
  'bottomk',
  'quantile',
  'count_values',
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'and',
  'or',
  'unless',
  'offset',
  'bool',
  'inf',
  'nan',
  'Inf',
  'NaN',
]);

/** Every `name{label="…", …}` selector in an expression: the metric and the label names it matches on. */
export function selectorsIn(expr: string): { name: string; labels: string[] }[] {
  return [...expr.matchAll(/([A-Za-z_:][A-Za-z0-9_:]*)\s*\{([^}]*)\}/g)].map(([, name, matchers]) => ({
    name: name!,
    labels: [...matchers!.matchAll(/([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)/g)].map((m) => m[1]!),
  }));
}
