// When the simulated platform tries a failed delivery again: exponential back-off with jitter, within a
// retry window measured from the first attempt (§7: 72 hours, then the delivery fails for good).

export interface RetryPolicy {
  /** Back-off before the first retry, ms. */
  initialMs: number;
  /** Back-off never grows beyond this, ms. */
  maxMs: number;
  /** Each retry waits this many times longer than the one before. */
  factor: number;
  /** Retries happen only within this time from the first attempt, ms. */
  windowMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  initialMs: 1_000,
  maxMs: 3_600_000,
  factor: 2,
  windowMs: 72 * 3_600_000,
};

/**
 * The wait before retry number `retry` (1 for the first retry): `initial × factor^(retry−1)`, capped,
 * then jittered down to between half and all of it so that many failed deliveries do not retry in step.
 */
export function backoffMs(retry: number, policy: RetryPolicy, random: () => number): number {
  const base = Math.min(policy.maxMs, policy.initialMs * policy.factor ** Math.max(0, retry - 1));
  return Math.round(base / 2 + (random() * base) / 2);
}

/**
 * When to make retry number `retry` of a delivery first attempted at `firstAttemptAt`, given that the
 * attempt before it ended at `now`; undefined when the window is over and the delivery is given up.
 * The last retry happens at the window's end, not after it.
 */
export function nextAttemptAt(
  firstAttemptAt: number,
  now: number,
  retry: number,
  policy: RetryPolicy,
  random: () => number,
): number | undefined {
  const windowEnd = firstAttemptAt + policy.windowMs;
  if (now >= windowEnd) return undefined;
  return Math.min(now + backoffMs(retry, policy, random), windowEnd);
}
