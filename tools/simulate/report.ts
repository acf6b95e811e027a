// What a simulation run prints: the progress line while it runs and the final summary.
import type { SimulationResult, SimulationStats } from './simulation.js';

/** One progress line: `sent 120/500, acknowledged 118, retrying 2, retried 5, gave up 0 · 9.8/s`. */
export function progressLine(
  stats: Readonly<SimulationStats>,
  count: number | undefined,
  now: number,
): string {
  const seconds = Math.max(0.001, (now - stats.startedAt) / 1000);
  const total = count === undefined ? '' : `/${count}`;
  return (
    `sent ${stats.sent}${total}, acknowledged ${stats.acknowledged}, retrying ${stats.retrying}, ` +
    `retried ${stats.retried}, gave up ${stats.gaveUp} · ${(stats.sent / seconds).toFixed(1)}/s`
  );
}

/** The final line: `sent N, acknowledged N, retried N, gave up N (…details…)`. */
export function summaryLine(result: SimulationResult): string {
  const details = [
    `${result.webhooks} webhooks`,
    `${result.duplicates} duplicates (${result.reserialized} re-serialized)`,
    `${result.reordered} reordered`,
    ...(result.interrupted > 0 ? [`${result.interrupted} interrupted`] : []),
    `${(result.elapsedMs / 1000).toFixed(1)} s`,
  ];
  return (
    `sent ${result.sent}, acknowledged ${result.acknowledged}, retried ${result.retried}, ` +
    `gave up ${result.gaveUp} (${details.join(', ')})`
  );
}

/** The summary as JSON (`--json`): the counters and the ids given up, not the acknowledged ids. */
export function summaryJson(result: SimulationResult, seed: string): string {
  const { acknowledgedIds: _acknowledged, retrying: _retrying, startedAt: _startedAt, ...rest } = result;
  return JSON.stringify({ ...rest, seed });
}
