// The one retry helper of the stream kit: jittered exponential back-off; programmer errors never retried.

export interface RetryOptions {
  /** Attempts after the first; 0 means try once. */
  retries?: number;
  initialDelayMs?: number;
  maxDelayMs?: number;
  /** Each delay is multiplied by a random factor in [1 - jitter, 1 + jitter]. */
  jitter?: number;
  /** Decides whether an error is worth another attempt; programmer errors never are. */
  isRetriable?: (error: unknown) => boolean;
  /** Called before waiting for the next attempt (logs, metrics). */
  onRetry?: (error: unknown, attempt: number, delayMs: number) => void;
  sleep?: (ms: number) => Promise<void>;
}

/** Bugs, not weather: another attempt would fail the same way and hide the bug. */
export function isProgrammerError(error: unknown): boolean {
  return (
    error instanceof TypeError ||
    error instanceof ReferenceError ||
    error instanceof SyntaxError ||
    error instanceof RangeError
  );
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The delay before attempt `attempt` (1-based), without jitter. */
export function backoffDelay(attempt: number, initialDelayMs: number, maxDelayMs: number): number {
  return Math.min(maxDelayMs, initialDelayMs * 2 ** (attempt - 1));
}

/** Runs `attempt` until it resolves, the error is not retriable, or the retries are used up. */
export async function retry<T>(
  attempt: (attemptNumber: number) => Promise<T>,
  {
    retries = 5,
    initialDelayMs = 100,
    maxDelayMs = 5_000,
    jitter = 0.2,
    isRetriable = () => true,
    onRetry,
    sleep = defaultSleep,
  }: RetryOptions = {},
): Promise<T> {
  for (let n = 0; ; n++) {
    try {
      return await attempt(n);
    } catch (error) {
      if (n >= retries || isProgrammerError(error) || !isRetriable(error)) throw error;
      const base = backoffDelay(n + 1, initialDelayMs, maxDelayMs);
      const delay = Math.round(base * (1 - jitter + Math.random() * 2 * jitter));
      onRetry?.(error, n + 1, delay);
      await sleep(delay);
    }
  }
}
