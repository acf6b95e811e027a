// Requests per second to one endpoint: a token bucket that answers how long to wait, so the caller
// can tell a wait it can afford from one past its budget. Pure but for the clock it is given.

export type Clock = () => number;

export class RateLimiter {
  #tokens: number;
  #refilledAt: number;
  /** No request before this (a Retry-After the endpoint sent), epoch ms. */
  #heldUntil = 0;

  constructor(
    /** Requests per second. */
    private readonly perSecond: number,
    /** Requests that may go at once after a quiet spell: one second's worth. */
    private readonly burst = Math.max(1, Math.ceil(perSecond)),
    private readonly now: Clock = Date.now,
  ) {
    this.#tokens = burst;
    this.#refilledAt = now();
  }

  /**
   * Takes a slot for one request and returns how many ms to wait before sending it (0: now).
   * Slots are handed out in order, so concurrent callers are spaced 1/perSecond apart.
   */
  reserve(): number {
    const now = this.now();
    this.#refill(now);
    this.#tokens -= 1;
    const untilToken = this.#tokens >= 0 ? 0 : Math.ceil((-this.#tokens / this.perSecond) * 1000);
    return Math.max(untilToken, this.#heldUntil - now);
  }

  /** Gives back a slot reserved but not used (its wait was over budget). */
  release(): void {
    this.#tokens = Math.min(this.burst, this.#tokens + 1);
  }

  /** The endpoint said when to come back (429/503 Retry-After): nobody sends before then. */
  holdUntil(at: number): void {
    this.#heldUntil = Math.max(this.#heldUntil, at);
  }

  #refill(now: number): void {
    const elapsed = Math.max(0, now - this.#refilledAt);
    this.#refilledAt = now;
    this.#tokens = Math.min(this.burst, this.#tokens + (elapsed / 1000) * this.perSecond);
  }
}
