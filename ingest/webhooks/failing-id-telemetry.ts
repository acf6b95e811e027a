// Wires the failing-id list (failing-ids.ts) into the webhook route: what each answer does to it, its
// Prometheus series on ingest's /metrics, and its log lines (a long-failing id, a stored one, a give-up).
// Only deliveries that passed the signature check are tracked: a refused request's body is the
// sender's choice, never parsed, never remembered (refusals are counted by reason in the metrics).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Gauge, Histogram, type Registry } from 'prom-client';
import { type FailingId, FailingIds, keptId } from './failing-ids.js';

/** What one worker of `ingest --workers N` tells the others of an id (the id as the list keeps it). */
export interface FailingIdEvent {
  kind: 'failed' | 'stored';
  source: string;
  webhookId: string;
}

/**
 * The other workers of `ingest --workers N`. Each keeps its own list, and the platform's retry may reach
 * another worker than the failure did: a worker tells the others when an id starts failing with it, and
 * when it stores an id failing with another, which then takes the id off its list. Without this, that one
 * would report a stored id as failing for 72 hours, then as given up. (A retry that reaches another
 * worker before the word that its id failed, within milliseconds, is missed: the platform waits longer.)
 */
export interface FailingIdPeers {
  tell(event: FailingIdEvent): void;
  listen(listener: (event: FailingIdEvent) => void): void;
}

export interface FailingIdTelemetryOptions {
  failingIds: FailingIds;
  /** The other workers (`ingest --workers N`); none with one. */
  peers?: FailingIdPeers | undefined;
  registry: Registry;
  /** The configured source names: their gauges read 0 rather than nothing while no id fails. */
  sources: Iterable<string>;
  /** How often ids past the platform's retry window are looked for (they no longer change by themselves). */
  sweepEveryMs?: number;
}

/** How an id leaves the list: stored (200), given up (the platform's retry window ended), evicted (the list was full). */
const DEPARTURES = ['stored', 'given-up', 'evicted'] as const;
type Departure = (typeof DEPARTURES)[number];

/** The names of the series this module adds to ingest's registry. */
const FAILING_ID_SERIES = {
  failing: 'hookledger_ingest_failing_webhooks',
  oldest: 'hookledger_ingest_failing_webhook_oldest_seconds',
  attempts: 'hookledger_ingest_failing_webhook_attempts',
} as const;

/** Registers the series and hooks on `app`: call it inside the webhook route's plugin. */
export function watchFailingIds(
  app: FastifyInstance,
  { failingIds, peers, registry, sources, sweepEveryMs = 60_000 }: FailingIdTelemetryOptions,
): void {
  const registers = [registry];
  const sourceNames = [...sources];
  const attempts = new Histogram({
    name: FAILING_ID_SERIES.attempts,
    help: 'Non-200 answers a failing webhook id got before it left the list, by source and outcome (stored, given-up: the platform stopped retrying, evicted: the list was full).',
    labelNames: ['source', 'outcome'] as const,
    buckets: [1, 2, 3, 5, 10, 20, 50, 100, 250],
    registers,
  });
  // Every source's outcomes start at 0: an alert on increase() then sees the first given-up id too.
  for (const source of sourceNames) for (const outcome of DEPARTURES) attempts.zero({ source, outcome });
  const depart = (entry: FailingId, outcome: Departure) =>
    attempts.observe({ source: entry.source, outcome }, entry.attempts);
  // Ids past the platform's retry window change by nothing a request does: a timer looks for them, and
  // every scrape too, so /metrics never shows an id the platform no longer retries.
  // The ids failing with other workers (their word only: no series, no log line of their own here).
  const elsewhere = peers ? new FailingIds({ now: () => failingIds.now() }) : undefined;
  peers?.listen(({ kind, source, webhookId }) => {
    if (kind === 'failed') {
      elsewhere!.failed(source, webhookId, 0);
      return;
    }
    elsewhere!.stored(source, webhookId);
    const was = failingIds.stored(source, webhookId);
    if (was === undefined) return;
    depart(was, 'stored');
    app.log.info({ ...describeFailing(was, failingIds.now()), by: 'another worker' }, 'stored after failing');
  });
  const sweep = () => {
    elsewhere?.sweep();
    for (const entry of failingIds.sweep()) {
      depart(entry, 'given-up');
      app.log.error(describeFailing(entry, failingIds.now()), 'the platform has given up on this webhook');
    }
  };
  new Gauge({
    name: FAILING_ID_SERIES.failing,
    help: 'Webhook ids answered with anything but 200 and not stored since (the platform is retrying them), by source.',
    labelNames: ['source'] as const,
    registers,
    collect() {
      sweep();
      const summaries = failingIds.bySource();
      this.reset();
      for (const source of sourceNames) this.set({ source }, 0);
      for (const [source, { count }] of summaries) this.set({ source }, count);
    },
  });
  new Gauge({
    name: FAILING_ID_SERIES.oldest,
    help: 'Seconds since the first non-200 answer of the longest-failing webhook id, by source (the platform gives up at 72 h = 259200 s).',
    labelNames: ['source'] as const,
    registers,
    // With `--workers N`, the workers' highest: the longest-failing id of them all.
    aggregator: 'max',
    collect() {
      sweep();
      const summaries = failingIds.bySource();
      const now = failingIds.now();
      this.reset();
      for (const source of sourceNames) this.set({ source }, 0);
      for (const [source, { oldestFirstFailedAt }] of summaries)
        this.set({ source }, Math.max(0, (now - oldestFirstFailedAt) / 1000));
    },
  });

  // Fastify's callback form (no promise per request); a throw is fastify's to log, as a rejection was.
  app.addHook('onResponse', (request, reply, done) => {
    noteOutcome(request, reply);
    done();
  });

  function noteOutcome(request: FastifyRequest, reply: FastifyReply): void {
    const source = request.delivery?.source?.name;
    // Set by the route once the signature verified: a refusal (401, 413, an unknown source) names nothing.
    const webhookId = request.delivery?.webhookId;
    if (source === undefined || webhookId === undefined) return;
    if (reply.statusCode === 200) {
      const was = failingIds.stored(source, webhookId);
      if (was !== undefined) {
        depart(was, 'stored');
        request.log.info(describeFailing(was, failingIds.now()), 'stored after failing');
      }
      if (elsewhere?.stored(source, webhookId) !== undefined)
        peers!.tell({ kind: 'stored', source, webhookId: keptId(webhookId) });
      return;
    }
    const { entry, report, evicted } = failingIds.failed(source, webhookId, reply.statusCode);
    if (evicted !== undefined) depart(evicted, 'evicted');
    if (peers && entry.attempts === 1) peers.tell({ kind: 'failed', source, webhookId: entry.webhookId });
    if (report) request.log.warn(describeFailing(entry, failingIds.now()), 'webhook still failing');
  }

  const timer = setInterval(sweep, sweepEveryMs);
  timer.unref();
  app.addHook('onClose', async () => clearInterval(timer));
}

/** A log line's fields for an id: never the body, only what identifies it and how long it has failed. */
function describeFailing(entry: FailingId, now: number) {
  return {
    source: entry.source,
    webhookId: entry.webhookId,
    attempts: entry.attempts,
    lastStatus: entry.lastStatus,
    firstFailedAt: new Date(entry.firstFailedAt).toISOString(),
    failingForS: Math.round((now - entry.firstFailedAt) / 1000),
  };
}
