// What a simulation run prints: the progress line while it runs and the final summary.
import { INVALID_REASONS } from './invalid.js';
import { retried, type SimulationResult, type SimulationStats } from './simulation.js';

function plural(count: number, one: string, many = `${one}s`): string {
  return `${count} ${count === 1 ? one : many}`;
}

/**
 * One progress line, short enough for a terminal: `webhooks 120/300, acknowledged 118, deliveries 144,
 * retrying 2 (last: HTTP 503), gave up 0 · 9.8/s` (deliveries per second). Webhooks count towards
 * --count, so they never pass it; duplicates and retries count as deliveries.
 */
export function progressLine(
  stats: Readonly<SimulationStats>,
  count: number | undefined,
  now: number,
): string {
  const seconds = Math.max(0.001, (now - stats.startedAt) / 1000);
  const total = count === undefined ? '' : `/${count}`;
  // Why they are retried: an outage and a misconfiguration (HTTP 401, ECONNREFUSED) look alike otherwise.
  const last =
    stats.retrying > 0 && stats.lastAttemptFailure !== undefined
      ? ` (last: ${stats.lastAttemptFailure})`
      : '';
  return (
    `webhooks ${stats.webhooks}${total}, acknowledged ${stats.acknowledged}, deliveries ${stats.deliveries}, ` +
    `retrying ${stats.retrying}${last}, gave up ${stats.gaveUp} · ${(stats.deliveries / seconds).toFixed(1)}/s`
  );
}

/**
 * A hint for a failure that is no outage but the run's own mistake, said once: a 401 or a 404 is retried
 * as the platform would, and would otherwise only show as retries for the whole retry window.
 */
export function misconfigurationHint(failure: string, signed: boolean): string | undefined {
  if (failure === 'HTTP 401')
    return signed
      ? "the endpoint answered 401: is --key the source's signing key?"
      : 'the endpoint answered 401: does the source want signed deliveries (--key)?';
  if (failure === 'HTTP 404') return "the endpoint answered 404: is the URL's source right?";
  return undefined;
}

/**
 * The final summary: a headline, `sent 300 webhooks in 360 deliveries: acknowledged 300, retried 60
 * (duplicates sent on purpose 60, after a failure 0), gave up 0, invalid 15, OperationFailure 15`,
 * then one line of details.
 */
export function summaryLine(result: SimulationResult): string {
  const headline =
    `sent ${plural(result.webhooks, 'webhook')} in ${plural(result.deliveries, 'delivery', 'deliveries')}: ` +
    `acknowledged ${result.acknowledged}, retried ${retried(result)} ` +
    `(duplicates sent on purpose ${result.duplicates}, after a failure ${result.retriedAfterFailure}), ` +
    `gave up ${result.gaveUp}, invalid ${result.invalid}, OperationFailure ${result.failures}`;
  const byReason = INVALID_REASONS.filter((reason) => result.invalidByReason[reason] !== undefined)
    .map((reason) => `${reason} ${result.invalidByReason[reason]}`)
    .join(', ');
  const details = [
    ...(byReason === '' ? [] : [`invalid: ${byReason}`]),
    `${result.reserialized} of the duplicates re-serialized`,
    `${result.reordered} sent after a newer one`,
    ...(result.duplicatesGaveUp > 0
      ? [`${plural(result.duplicatesGaveUp, 'duplicate')} given up (their webhooks were acknowledged)`]
      : []),
    ...(result.interrupted > 0 ? [`${result.interrupted} interrupted`] : []),
    `${(result.elapsedMs / 1000).toFixed(1)} s`,
  ];
  return `${headline}\n  ${details.join('; ')}`;
}

/** The summary as JSON (`--json`): the counters and the ids given up, not the acknowledged ids. */
export function summaryJson(result: SimulationResult, seed: string): string {
  const {
    acknowledgedIds: _acknowledged,
    retrying: _retrying,
    lastAttemptFailure: _lastAttemptFailure,
    startedAt: _startedAt,
    ...rest
  } = result;
  return JSON.stringify({ ...rest, retried: retried(result), seed });
}
