// The dedupe-router's own series: records by route, duplicates, DLQ by reason, freshness, expiry.
import { Counter, Histogram, type Registry } from 'prom-client';
import type { EventHandler } from '../../runtime/streams/metrics.js';

/** Handlers for the router's instrumentation events, registered on `registry`. */
export function dedupeMetricEvents(registry: Registry): Record<string, EventHandler> {
  const registers = [registry];
  const routed = new Counter({
    name: 'hookledger_dedupe_records_total',
    help: 'First deliveries decided, by route (routed, failure, dead-lettered).',
    labelNames: ['route'] as const,
    registers,
  });
  const dlq = new Counter({
    name: 'hookledger_dedupe_dlq_total',
    help: 'Records dead-lettered, by reason.',
    labelNames: ['reason'] as const,
    registers,
  });
  const duplicates = new Counter({
    name: 'hookledger_dedupe_duplicates_total',
    help: 'Deliveries dropped as duplicates of an id seen within the window, by its recorded decision.',
    labelNames: ['decision'] as const,
    registers,
  });
  const freshness = new Histogram({
    name: 'hookledger_dedupe_freshness_seconds',
    help: 'Output time minus receivedAt of entity events (how far behind the router runs).',
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600],
    registers,
  });
  const expired = new Counter({
    name: 'hookledger_dedupe_expired_total',
    help: 'Ids forgotten because they left the dedupe window (by stream time).',
    registers,
  });
  return {
    'processor.dedupe.routed': ({ route = '', reason = '' }) => {
      routed.inc({ route });
      if (route === 'dead-lettered') dlq.inc({ reason });
    },
    'processor.dedupe.duplicate': ({ decision = '' }) => duplicates.inc({ decision }),
    'processor.dedupe.freshness': (_labels, value) => freshness.observe(value ?? 0),
    'processor.dedupe.expired': (_labels, value) => expired.inc(value ?? 0),
  };
}
