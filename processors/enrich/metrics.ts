// The enrich stage's own series: events by outcome, requests by endpoint and result, request time,
// breaker state, and how long after the delivery its full record was fetched.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { EventHandler } from '../../runtime/streams/metrics.js';

export function enrichMetricEvents(registry: Registry): Record<string, EventHandler> {
  const registers = [registry];
  const events = new Counter({
    name: 'hookledger_enrich_events_total',
    help: 'Energy-switch events read by the enrich stage, by outcome (fetched, operation-failure, dead-lettered, skipped-<why>).',
    labelNames: ['outcome'] as const,
    registers,
  });
  const requests = new Counter({
    name: 'hookledger_enrich_requests_total',
    help: 'Requests to GraphQL endpoints, by endpoint and result (answered, throttled, failed, rate-limited).',
    labelNames: ['endpoint', 'result'] as const,
    registers,
  });
  const seconds = new Histogram({
    name: 'hookledger_enrich_request_seconds',
    help: 'Time to an answer (or a failure) of one request.',
    labelNames: ['endpoint'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers,
  });
  const breaker = new Gauge({
    name: 'hookledger_enrich_breaker_open',
    help: '1 while an endpoint’s circuit is open (the stage waits for it), else 0.',
    labelNames: ['endpoint'] as const,
    registers,
  });
  const freshness = new Histogram({
    name: 'hookledger_enrich_freshness_seconds',
    help: 'Fetch time minus the delivery’s receivedAt.',
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600],
    registers,
  });
  return {
    'processor.enrich.event': ({ outcome = '' }) => events.inc({ outcome }),
    'processor.enrich.freshness': (_l, value) => freshness.observe(value ?? 0),
    'enrich.request': ({ endpoint = '', result = '' }) => requests.inc({ endpoint, result }),
    'enrich.request.seconds': ({ endpoint = '' }, value) => seconds.observe({ endpoint }, value ?? 0),
    'enrich.breaker': ({ endpoint = '' }, value) => breaker.set({ endpoint }, value ?? 0),
  };
}
