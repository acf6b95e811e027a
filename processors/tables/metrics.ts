// The tables stage's own series: events by outcome, freshness, forgotten deletion markers.
import { Counter, Histogram, type Registry } from 'prom-client';
import { metricFoldOf } from '../../runtime/streams/metric-fold.js';
import type { EventHandler } from '../../runtime/streams/metrics.js';

export function tablesMetricEvents(registry: Registry): Record<string, EventHandler> {
  const registers = [registry];
  const events = new Counter({
    name: 'hookledger_tables_events_total',
    help: 'Entity events merged, by table and outcome (merged, state-only, unchanged, skipped).',
    labelNames: ['table', 'outcome'] as const,
    registers,
  });
  const freshness = new Histogram({
    name: 'hookledger_tables_freshness_seconds',
    help: 'Table write time minus the delivery’s receivedAt.',
    labelNames: ['table'] as const,
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600],
    registers,
  });
  const forgotten = new Counter({
    name: 'hookledger_tables_forgotten_total',
    help: 'Merge states dropped because they hold nothing (deletion markers are kept for good).',
    labelNames: ['table'] as const,
    registers,
  });
  // Per event: written through the registry's fold (metric-fold.ts), summed per transaction.
  const fold = metricFoldOf(registry);
  const foldedEvents = fold.counter(events);
  const foldedFreshness = fold.histogram(freshness);
  return {
    'processor.tables.event': ({ table = '', outcome = '' }) => foldedEvents.inc({ table, outcome }),
    'processor.tables.freshness': ({ table = '' }, value) => foldedFreshness.observe({ table }, value ?? 0),
    'processor.tables.forgotten': ({ table = '' }, value) => forgotten.inc({ table }, value ?? 0),
  };
}
