// What `hookledger start` shows in its one status line, read from the services' own counters in this
// process (the series /metrics serves), so the line and the metrics never disagree.
import type { Registry } from 'prom-client';

export interface PipelineStatus {
  /** Webhook requests ingest answered, whatever the answer. */
  received: number;
  /** Answered 200: the delivery is in webhooks.raw. */
  stored: number;
  /** First deliveries the router sent on (an entity stream or webhooks.failures). */
  routed: number;
  /** Retries of an id already decided, dropped by the router. */
  duplicates: number;
  /** Deliveries in webhooks.dlq: the router could not understand them, or a processor failed on them. */
  deadLettered: number;
  /** Records not yet processed, summed over the processors' input partitions. */
  lag: number;
}

/** One series' samples: what prom-client's `metric.get()` gives. */
export interface Samples {
  values: readonly { value: number; labels: Partial<Record<string, string | number>> }[];
}

/** The series the status line is made of, by name. */
export const STATUS_SERIES = {
  requests: 'hookledger_ingest_requests_total',
  decisions: 'hookledger_dedupe_records_total',
  duplicates: 'hookledger_dedupe_duplicates_total',
  failedRecords: 'hookledger_stream_failed_records_total',
  lag: 'hookledger_stream_consumer_lag',
} as const;

type SeriesName = keyof typeof STATUS_SERIES;

function sum(samples: Samples | undefined, where: (labels: Samples['values'][number]['labels']) => boolean) {
  let total = 0;
  for (const { value, labels } of samples?.values ?? []) if (where(labels)) total += value;
  return total;
}

const all = () => true;

/** The status from each series' samples (a series not there yet counts as zero). */
export function statusFrom(series: Partial<Record<SeriesName, Samples>>): PipelineStatus {
  return {
    received: sum(series.requests, all),
    stored: sum(series.requests, (l) => String(l.status) === '200'),
    routed: sum(series.decisions, (l) => l.route === 'routed' || l.route === 'failure'),
    duplicates: sum(series.duplicates, all),
    // The router's own series counts its stream kit's dead letters too (its dead-letter hook decides
    // them): the kit's count is added for the other stages only, or the router's would count twice.
    deadLettered:
      sum(series.decisions, (l) => l.route === 'dead-lettered') +
      sum(series.failedRecords, (l) => l.outcome === 'dead-lettered' && l.app !== 'dedupe-router'),
    lag: sum(series.lag, all),
  };
}

/** `received 349 · stored 349 · routed 300 · duplicates 49 · dead-lettered 0 · lag 0` */
export function statusLine(status: PipelineStatus): string {
  return [
    `received ${status.received}`,
    `stored ${status.stored}`,
    `routed ${status.routed}`,
    `duplicates ${status.duplicates}`,
    `dead-lettered ${status.deadLettered}`,
    `lag ${status.lag}`,
  ].join(' · ');
}

/** Reads the status from the registries that hold the series (ingest's and the processors'). */
export async function readStatus(registries: readonly Registry[]): Promise<PipelineStatus> {
  const series: Partial<Record<SeriesName, Samples>> = {};
  for (const [key, name] of Object.entries(STATUS_SERIES) as [SeriesName, string][]) {
    for (const registry of registries) {
      const metric = registry.getSingleMetric(name);
      if (metric) series[key] = (await metric.get()) as Samples;
    }
  }
  return statusFrom(series);
}
