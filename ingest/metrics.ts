// Ingest's Prometheus series, on a registry of its own (several apps can live in one test process).
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { registerBuildInfo } from '../runtime/build-info.js';
import type { BatchStats } from './producer/batcher.js';

const SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export interface IngestMetrics {
  registry: Registry;
  requests: Counter<'source' | 'status'>;
  signatureFailures: Counter<'source' | 'reason'>;
  /** Refused requests kept in webhooks.quarantine (acknowledged), by source. */
  quarantined: Counter<'source'>;
  /** Refused requests not kept: unverifiable (no signature to match), over-rate / over-bytes (the source's bound), over-total (all sources'), not-stored (Kafka). */
  quarantineDropped: Counter<'source' | 'reason'>;
  requestSeconds: Histogram<'source' | 'status'>;
  inFlight: Gauge<'source'>;
  batchRecords: Histogram;
  batchSeconds: Histogram<'outcome'>;
  producerReplacements: Counter;
  /** Wire the producer's batches in. */
  observeBatch(stats: BatchStats): void;
  /** Gauges read at scrape time. */
  watch(read: { pendingBytes: () => number; ready: () => boolean }): void;
}

export function createIngestMetrics({ defaultMetrics = true } = {}): IngestMetrics {
  const registry = new Registry();
  if (defaultMetrics) collectDefaultMetrics({ register: registry, prefix: 'hookledger_ingest_' });
  registerBuildInfo(registry);
  const registers = [registry];
  const requests = new Counter({
    name: 'hookledger_ingest_requests_total',
    help: 'Webhook requests answered, by source and HTTP status.',
    labelNames: ['source', 'status'] as const,
    registers,
  });
  const signatureFailures = new Counter({
    name: 'hookledger_ingest_signature_failures_total',
    help: 'Requests to a known source refused by the signature check, by reason (missing, algorithm, malformed, mismatch). An unknown source is not one: hookledger_ingest_requests_total{source="(unknown)",status="404"}.',
    labelNames: ['source', 'reason'] as const,
    registers,
  });
  const quarantined = new Counter({
    name: 'hookledger_ingest_quarantined_total',
    help: 'Requests refused by the signature check and kept in webhooks.quarantine, by source.',
    labelNames: ['source'] as const,
    registers,
  });
  const quarantineDropped = new Counter({
    name: 'hookledger_ingest_quarantine_dropped_total',
    help: 'Requests refused by the signature check and not kept, by source and reason (unverifiable: a missing, malformed or other-algorithm signature; over-rate, over-bytes: the source bound; over-total: all sources; not-stored: Kafka).',
    labelNames: ['source', 'reason'] as const,
    registers,
  });
  const requestSeconds = new Histogram({
    name: 'hookledger_ingest_request_duration_seconds',
    help: 'Time from request to answer, by source and HTTP status.',
    labelNames: ['source', 'status'] as const,
    buckets: SECONDS,
    registers,
  });
  const inFlight = new Gauge({
    name: 'hookledger_ingest_requests_in_flight',
    help: 'Webhook requests being handled (most wait for their acknowledgement).',
    labelNames: ['source'] as const,
    registers,
  });
  const batchRecords = new Histogram({
    name: 'hookledger_ingest_produce_batch_records',
    help: 'Records per produce call.',
    buckets: [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000],
    registers,
  });
  const batchSeconds = new Histogram({
    name: 'hookledger_ingest_produce_duration_seconds',
    help: 'Time a produce call took until acknowledged (acks=all), by outcome.',
    labelNames: ['outcome'] as const,
    buckets: SECONDS,
    registers,
  });
  const producerReplacements = new Counter({
    name: 'hookledger_ingest_producer_replacements_total',
    help: 'Producers abandoned after a failed or timed-out send and replaced by a new one.',
    registers,
  });
  return {
    registry,
    requests,
    signatureFailures,
    quarantined,
    quarantineDropped,
    requestSeconds,
    inFlight,
    batchRecords,
    batchSeconds,
    producerReplacements,
    observeBatch(stats) {
      batchRecords.observe(stats.records);
      batchSeconds.observe({ outcome: stats.error === undefined ? 'ok' : 'error' }, stats.durationMs / 1000);
    },
    watch({ pendingBytes, ready }) {
      new Gauge({
        name: 'hookledger_ingest_pending_bytes',
        help: 'Bytes of records queued or in flight to Kafka (503 at once above INGEST_MAX_PENDING_BYTES).',
        registers,
        collect() {
          this.set(pendingBytes());
        },
      });
      new Gauge({
        name: 'hookledger_ingest_producer_ready',
        help: '1 while a producer is connected and writing, else 0.',
        registers,
        // With `--workers N`, the workers' lowest: 1 only while every worker can write.
        aggregator: 'min',
        collect() {
          this.set(ready() ? 1 : 0);
        },
      });
    },
  };
}
