// When to try a fetch again: which answers are worth another attempt, exponential back-off with full
// jitter, and the endpoint's own Retry-After (seconds or an HTTP date). Pure.

/** 429 (too many requests), 408 and 5xx are the endpoint's weather; other statuses are answers. */
export function isRetriableStatus(status: number): boolean {
  return status === 429 || status === 408 || status >= 500;
}

export interface BackOff {
  readonly initialMs: number;
  readonly maxMs: number;
}

/**
 * The wait before retry number `retry` (1 for the first): a uniform draw in [0, min(max, initial ×
 * 2^(retry−1))] ("full jitter"), so callers failing together do not come back together.
 */
export function backOffMs(
  retry: number,
  { initialMs, maxMs }: BackOff,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(maxMs, initialMs * 2 ** Math.max(0, retry - 1));
  return Math.round(random() * ceiling);
}

/**
 * The longest Retry-After honoured: an endpoint asking for a day (or a date far ahead) would hold every
 * fetch to it that long, with no probe to notice it is back, until a restart.
 */
export const MAX_RETRY_AFTER_MS = 300_000;

/**
 * Retry-After as ms from `now` (at most MAX_RETRY_AFTER_MS): delta-seconds or an HTTP date; undefined when
 * absent or unreadable.
 */
export function retryAfterMs(header: string | null | undefined, now: number): number | undefined {
  if (header === null || header === undefined) return undefined;
  const text = header.trim();
  if (/^\d+$/.test(text)) return Math.min(MAX_RETRY_AFTER_MS, Number(text) * 1000);
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.min(MAX_RETRY_AFTER_MS, Math.max(0, at - now));
}

/**
 * The wait before the next attempt: the endpoint's Retry-After when it sent one (never less), else
 * the jittered back-off.
 */
export function nextWaitMs(
  retry: number,
  backOff: BackOff,
  retryAfter: number | undefined,
  random: () => number = Math.random,
): number {
  const jittered = backOffMs(retry, backOff, random);
  return retryAfter === undefined ? jittered : Math.max(retryAfter, jittered);
}
