// At `info`, ingest logs one line per interval in which it answered anything (requests by status),
// rather than one per request (those lines are `debug`): a busy service's log stays readable.
import type { Counter } from 'prom-client';
import type { Logger } from '../runtime/log.js';

/** Requests answered, by HTTP status. */
export type StatusCounts = Record<string, number>;

interface CounterValue {
  labels: Partial<Record<string, string | number>>;
  value: number;
}

/** Totals by status from the requests counter's values (summed over sources). */
export function countsByStatus(values: readonly CounterValue[]): StatusCounts {
  const counts: StatusCounts = {};
  for (const { labels, value } of values) {
    const status = String(labels.status ?? 'unknown');
    counts[status] = (counts[status] ?? 0) + value;
  }
  return counts;
}

/** What was answered since `before`, by status; statuses with nothing new are left out. */
export function countsSince(now: StatusCounts, before: StatusCounts): StatusCounts {
  const since: StatusCounts = {};
  for (const [status, count] of Object.entries(now)) {
    const added = count - (before[status] ?? 0);
    if (added > 0) since[status] = added;
  }
  return since;
}

export interface RequestSummary {
  /** Stops the timer and logs what the last interval answered. */
  stop(): Promise<void>;
}

/** Logs `requests answered` with the counts by status every `intervalMs` in which there were any. */
export function startRequestSummary({
  requests,
  logger,
  intervalMs = 10_000,
}: {
  requests: Counter<'source' | 'status'>;
  logger: Logger;
  intervalMs?: number;
}): RequestSummary {
  let before: StatusCounts = {};
  let since = Date.now();
  const summarize = async () => {
    const now = countsByStatus((await requests.get()).values);
    const answered = countsSince(now, before);
    const total = Object.values(answered).reduce((sum, n) => sum + n, 0);
    before = now;
    const seconds = Math.round((Date.now() - since) / 1000);
    since = Date.now();
    if (total > 0) logger.info({ byStatus: answered, total, seconds }, 'requests answered');
  };
  const timer = setInterval(() => void summarize(), intervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await summarize();
    },
  };
}
