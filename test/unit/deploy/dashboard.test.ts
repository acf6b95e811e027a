// deploy/grafana/hookledger.json: every query names a metric ingest or the processors really expose,
// matched on labels that metric has, so the dashboard cannot drift from the code.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { type ExposedSeries, exposition, metricNamesIn, selectorsIn } from '../../helpers/exposed-metrics.js';

const FILE = path.resolve(import.meta.dirname, '../../../deploy/grafana/hookledger.json');

interface Panel {
  title: string;
  type: string;
  targets?: { expr: string }[];
  panels?: Panel[];
}
interface Dashboard {
  uid: string;
  panels: Panel[];
  templating: { list: { name: string; type: string; query?: string | { query: string } }[] };
}

const dashboard = JSON.parse(readFileSync(FILE, 'utf8')) as Dashboard;
const panels = dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])]);
const queries = panels.flatMap((p) => (p.targets ?? []).map((t) => ({ where: p.title, expr: t.expr })));

let exposed: ExposedSeries;

// Builds the ingest app and the processors' registries: a few seconds on a busy machine.
beforeAll(async () => {
  exposed = (await exposition()).series;
}, 30_000);

function expectExposed(where: string, expr: string) {
  const names = metricNamesIn(expr);
  expect(names.length, `${where}: ${expr} reads a metric`).toBeGreaterThan(0);
  for (const name of names) expect(exposed.has(name), `${where} reads ${name}`).toBe(true);
  for (const { name, labels } of selectorsIn(expr)) {
    for (const label of labels)
      expect(exposed.get(name)?.has(label), `${where}: ${name}{${label}}`).toBe(true);
  }
}

describe('the Grafana dashboard', () => {
  it('queries only metrics the services expose, on labels they have', () => {
    expect(queries.length).toBeGreaterThan(20);
    for (const { where, expr } of queries) expectExposed(where, expr);
  });

  it('takes its source list from an exposed metric and label', () => {
    const source = dashboard.templating.list.find((v) => v.name === 'source')!;
    const query = typeof source.query === 'string' ? source.query : source.query!.query;
    const [, metric, label] = /^label_values\((\w+),\s*(\w+)\)$/.exec(query)!;
    expect(exposed.get(metric!)?.has(label!)).toBe(true);
  });

  it('shows the failing ids and their age, the router’s retries and delays, and the processors’ health', () => {
    const read = new Set(queries.flatMap((q) => metricNamesIn(q.expr)));
    for (const name of [
      'hookledger_ingest_failing_webhooks',
      'hookledger_ingest_failing_webhook_oldest_seconds',
      'hookledger_ingest_failing_webhook_attempts_count',
      'hookledger_dedupe_duplicates_per_id_bucket',
      'hookledger_dedupe_delivery_delay_seconds_bucket',
      'hookledger_stream_consumer_lag',
      'hookledger_stream_ready',
    ])
      expect(read.has(name), name).toBe(true);
  });

  it('is importable: a uid, a Prometheus data source variable, panel ids unique', () => {
    expect(dashboard.uid).toBe('hookledger');
    expect(dashboard.templating.list.some((v) => v.type === 'datasource')).toBe(true);
    const ids = panels.map((p) => (p as Panel & { id: number }).id);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
