// The dedupe-router's own series: records by route, duplicates, DLQ by reason, freshness, expiry, and
// per delivery how often the platform retried its id and how late it arrived (by source and trigger).
import { Counter, Histogram, type Registry } from 'prom-client';
import { metricFoldOf } from '../../runtime/streams/metric-fold.js';
import type { EventHandler } from '../../runtime/streams/metrics.js';
import { triggerLabel } from './trigger-label.js';

/**
 * Handlers for the router's instrumentation events, registered on `registry`. Several a record: they
 * write through the registry's fold (metric-fold.ts), summed per transaction.
 */
export function dedupeMetricEvents(registry: Registry): Record<string, EventHandler> {
  const registers = [registry];
  const fold = metricFoldOf(registry);
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
  const duplicatesPerId = new Histogram({
    name: 'hookledger_dedupe_duplicates_per_id',
    help: 'Per delivery that reached the router, the duplicates of its id seen so far (0: the first delivery), by source and trigger (the contract’s, else "other"). Deliveries above k−1 are the ids retried at least k times. Counted in memory for the 10,000 most recently retried ids of each partition: after a restart, a rebalance or an eviction an id counts from 1 again.',
    labelNames: ['source', 'trigger'] as const,
    buckets: [0, 1, 2, 3, 5, 10, 20, 50, 100],
    registers,
  });
  const delay = new Histogram({
    name: 'hookledger_dedupe_delivery_delay_seconds',
    help: 'Per delivery that reached the router, receivedAt minus webhook.date (how late the platform delivered, retries included), by source and trigger.',
    labelNames: ['source', 'trigger'] as const,
    // Seconds up to the platform's 72 h retry window and past it.
    buckets: [1, 5, 15, 60, 300, 900, 3600, 4 * 3600, 12 * 3600, 24 * 3600, 48 * 3600, 72 * 3600, 96 * 3600],
    registers,
  });
  const deliveryLabels = ({ source = '', trigger = '' }: Readonly<Record<string, string>>) => ({
    source,
    trigger: triggerLabel(trigger),
  });
  const folded = {
    routed: fold.counter(routed),
    dlq: fold.counter(dlq),
    duplicates: fold.counter(duplicates),
    freshness: fold.histogram(freshness),
    duplicatesPerId: fold.histogram(duplicatesPerId),
    delay: fold.histogram(delay),
  };
  return {
    'processor.dedupe.delivery': (labels, value) =>
      folded.duplicatesPerId.observe(deliveryLabels(labels), value ?? 0),
    'processor.dedupe.delay': (labels, value) => folded.delay.observe(deliveryLabels(labels), value ?? 0),
    'processor.dedupe.routed': ({ route = '', reason = '' }) => {
      folded.routed.inc({ route });
      if (route === 'dead-lettered') folded.dlq.inc({ reason });
    },
    'processor.dedupe.duplicate': ({ decision = '' }) => folded.duplicates.inc({ decision }),
    'processor.dedupe.freshness': (_labels, value) => folded.freshness.observe({}, value ?? 0),
    // Once per expiry punctuation: not folded.
    'processor.dedupe.expired': (_labels, value) => expired.inc(value ?? 0),
  };
}
