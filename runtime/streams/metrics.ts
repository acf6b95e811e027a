// The stream kit's Prometheus series, fed by instrumentation events; apps add their own events' series.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { type FoldedCounter, type FoldedHistogram, metricFoldOf } from './metric-fold.js';
import type { Instrument, StreamApp } from './stream-runner.js';
import type { InstrumentEvent } from './stream-task.js';

const SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

export type EventHandler = (labels: Readonly<Record<string, string>>, value: number | undefined) => void;

export interface StreamMetrics {
  /**
   * Pass to the stream app (and so to its processors' context). Its `all` takes a committed
   * transaction's events at once: their updates are summed per series and label set, then written.
   */
  instrument: Instrument & { all(events: readonly InstrumentEvent[]): void };
  /** Gauges read at scrape time: partitions by status, entries per store (tracked ids). */
  watch(app: StreamApp): void;
}

/** One registry may hold several apps' series (both stages in one process): series are shared, `app` labels them. */
export function createStreamMetrics({
  app,
  registry,
  events = {},
}: {
  app: string;
  registry: Registry;
  /**
   * Handlers for the app's own events (`processor.dedupe.duplicate`, …), their series on `registry`:
   * what they write through its fold (metric-fold.ts) is flushed after each batch of events.
   */
  events?: Record<string, EventHandler>;
}): StreamMetrics {
  const series = kitSeries(registry);
  const fold = metricFoldOf(registry);
  const handlers: Record<string, EventHandler> = {
    'stream.batch': ({ topic = '' }, value) => series.records.inc({ app, topic }, value ?? 0),
    'stream.transaction': (_l, value) => series.transactionSeconds.observe({ app }, value ?? 0),
    'stream.batch.seconds': (_l, value) => series.batchSeconds.observe({ app }, value ?? 0),
    'stream.batch.retry': () => series.retries.inc({ app }),
    'stream.lag': ({ topic = '', partition = '' }, value) =>
      series.lag.set({ app, topic, partition }, value ?? 0),
    'stream.lag.gone': ({ topic = '', partition = '' }) => series.lag.remove({ app, topic, partition }),
    'stream.restore': ({ topic = '' }, value) => series.restoreSeconds.observe({ app, topic }, value ?? 0),
    'stream.dead-letter': ({ reason = '' }) =>
      series.failedRecords.inc({ app, reason, outcome: 'dead-lettered' }),
    'stream.skipped': ({ reason = '' }) => series.failedRecords.inc({ app, reason, outcome: 'skipped' }),
    'stream.record.ahead-of-clock': ({ topic = '' }, value) => {
      series.recordsAheadOfClock.inc({ app, topic });
      series.recordLeadSeconds.set({ app, topic }, value ?? 0);
    },
    ...events,
  };
  const instrument = (event: string, labels: Readonly<Record<string, string>> = {}, value?: number) => {
    handlers[event]?.(labels, value);
    fold.flush();
  };
  const all = (events: readonly InstrumentEvent[]) => {
    try {
      for (let i = 0; i < events.length; i++) {
        const [event, labels = {}, value] = events[i]!;
        handlers[event]?.(labels, value);
      }
    } finally {
      fold.flush();
    }
  };
  return {
    instrument: Object.assign(instrument, { all }),
    watch(streamApp) {
      series.watched.set(app, streamApp);
    },
  };
}

interface KitSeries {
  records: FoldedCounter<'app' | 'topic'>;
  transactionSeconds: FoldedHistogram<'app'>;
  batchSeconds: FoldedHistogram<'app'>;
  retries: FoldedCounter<'app'>;
  lag: Gauge<'app' | 'topic' | 'partition'>;
  restoreSeconds: FoldedHistogram<'app' | 'topic'>;
  failedRecords: FoldedCounter<'app' | 'reason' | 'outcome'>;
  recordsAheadOfClock: FoldedCounter<'app' | 'topic'>;
  recordLeadSeconds: Gauge<'app' | 'topic'>;
  watched: Map<string, StreamApp>;
}

const kitSeriesByRegistry = new WeakMap<Registry, KitSeries>();

function kitSeries(registry: Registry): KitSeries {
  const existing = kitSeriesByRegistry.get(registry);
  if (existing) return existing;
  const registers = [registry];
  const fold = metricFoldOf(registry);
  const watched = new Map<string, StreamApp>();
  const created: KitSeries = {
    watched,
    records: fold.counter(
      new Counter({
        name: 'hookledger_stream_records_total',
        help: 'Input records processed and committed, by app and input topic.',
        labelNames: ['app', 'topic'] as const,
        registers,
      }),
    ),
    transactionSeconds: fold.histogram(
      new Histogram({
        name: 'hookledger_stream_transaction_seconds',
        help: 'Time to write a batch: outputs, changelog and offsets sent and committed (one transaction when exactly-once).',
        labelNames: ['app'] as const,
        buckets: SECONDS,
        registers,
      }),
    ),
    batchSeconds: fold.histogram(
      new Histogram({
        name: 'hookledger_stream_batch_seconds',
        help: 'Time to process and write one fetched batch, decode to commit.',
        labelNames: ['app'] as const,
        buckets: SECONDS,
        registers,
      }),
    ),
    retries: fold.counter(
      new Counter({
        name: 'hookledger_stream_batch_retries_total',
        help: 'Transactions aborted and tried again.',
        labelNames: ['app'] as const,
        registers,
      }),
    ),
    lag: new Gauge({
      name: 'hookledger_stream_consumer_lag',
      help: 'Records between the last batch fetched and the partition end, per input partition.',
      labelNames: ['app', 'topic', 'partition'] as const,
      registers,
    }),
    restoreSeconds: fold.histogram(
      new Histogram({
        name: 'hookledger_stream_restore_seconds',
        help: 'Time to restore a changelog for newly assigned partitions.',
        labelNames: ['app', 'topic'] as const,
        buckets: SECONDS,
        registers,
      }),
    ),
    failedRecords: fold.counter(
      new Counter({
        name: 'hookledger_stream_failed_records_total',
        help: 'Input records whose processing failed (processor-error, output-too-large): dead-lettered, or skipped when the app has no dead-letter sink.',
        labelNames: ['app', 'reason', 'outcome'] as const,
        registers,
      }),
    ),
    recordsAheadOfClock: fold.counter(
      new Counter({
        name: 'hookledger_stream_records_ahead_of_clock_total',
        help: "Input records stamped more than a minute ahead of this process's clock (the writer's clock, ingest's, runs fast); stream time does not follow them.",
        labelNames: ['app', 'topic'] as const,
        registers,
      }),
    ),
    recordLeadSeconds: new Gauge({
      name: 'hookledger_stream_record_lead_seconds',
      help: "How far ahead of this process's clock the last such record was stamped, in seconds.",
      labelNames: ['app', 'topic'] as const,
      registers,
      // Several stream threads (process --threads): the furthest ahead, not a sum.
      aggregator: 'max',
    }),
  };
  new Gauge({
    name: 'hookledger_stream_ready',
    help: '1 while the app is ready (its /readyz check: joined its group, every partition restored and running), else 0.',
    labelNames: ['app'] as const,
    registers,
    // Several stream threads (process --threads): ready only when every thread is.
    aggregator: 'min',
    collect() {
      this.reset();
      for (const [app, streamApp] of watched) this.set({ app }, streamApp.isReady() ? 1 : 0);
    },
  });
  new Gauge({
    name: 'hookledger_stream_partitions',
    help: 'Input partitions held, by state (assigned, restoring, running, …).',
    labelNames: ['app', 'status'] as const,
    registers,
    collect() {
      this.reset();
      for (const [app, streamApp] of watched) {
        // RUNNING shows as `ready`, the series' name for it since before the state machine.
        for (const task of streamApp.tasks())
          this.inc({ app, status: task.status === 'running' ? 'ready' : task.status });
      }
    },
  });
  new Gauge({
    name: 'hookledger_stream_store_entries',
    help: 'Entries held in state stores (for the dedupe store: tracked ids), summed over partitions.',
    labelNames: ['app', 'store'] as const,
    registers,
    collect() {
      this.reset();
      for (const [app, streamApp] of watched) {
        for (const task of streamApp.tasks()) {
          for (const [store, size] of Object.entries(task.stores)) this.inc({ app, store }, size);
        }
      }
    },
  });
  new Gauge({
    name: 'hookledger_stream_restore_remaining_records',
    help: 'Changelog records left to restore before the restoring partitions run (once their ends are known).',
    labelNames: ['app'] as const,
    registers,
    collect() {
      this.reset();
      for (const [app, streamApp] of watched) {
        let remaining = 0;
        for (const { restoreProgress } of streamApp.tasks())
          if (restoreProgress?.total !== undefined)
            remaining += Math.max(0, restoreProgress.total - restoreProgress.records);
        this.set({ app }, remaining);
      }
    },
  });
  new Gauge({
    name: 'hookledger_stream_state_disk_bytes',
    help: 'Bytes the state directories take on disk (PROCESSOR_STATE_STORE=lmdb; 0 in memory).',
    labelNames: ['app'] as const,
    registers,
    collect() {
      this.reset();
      for (const [app, streamApp] of watched) this.set({ app }, streamApp.stateDiskBytes?.() ?? 0);
    },
  });
  new Gauge({
    name: 'hookledger_stream_standby_lag_records',
    help: 'Records a standby copy is behind, per changelog partition followed (PROCESSOR_STANDBY_REPLICAS=1).',
    labelNames: ['app', 'topic', 'partition'] as const,
    registers,
    // Several stream threads (process --threads) may each follow a partition: the copy furthest behind.
    aggregator: 'max',
    collect() {
      this.reset();
      for (const [app, streamApp] of watched)
        for (const { topic, partition, behind } of streamApp.standbyLag?.() ?? [])
          this.set({ app, topic, partition: String(partition) }, behind);
    },
  });
  kitSeriesByRegistry.set(registry, created);
  return created;
}
