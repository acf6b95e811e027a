// One endpoint's circuit breaker: closed (requests go), open (the endpoint is down: nothing is sent
// until the cool-down ends), half-open (one probe decides). An outage then costs one probe per
// cool-down instead of a request per record. Pure but for the clock it is given.
import type { Clock } from './rate-limiter.js';

export type BreakerState = 'closed' | 'open' | 'half-open';

export interface BreakerOptions {
  /** Fetches in a row that ran out of retries before the breaker opens. */
  readonly failures: number;
  /** How long it stays open before a probe; doubles on each failed probe, up to maxCooldownMs. */
  readonly cooldownMs: number;
  readonly maxCooldownMs?: number;
}

export class CircuitBreaker {
  #state: BreakerState = 'closed';
  #failuresInARow = 0;
  #openedAt = 0;
  #cooldownMs: number;
  #probing = false;

  constructor(
    private readonly options: BreakerOptions,
    private readonly now: Clock = Date.now,
  ) {
    this.#cooldownMs = options.cooldownMs;
  }

  get state(): BreakerState {
    if (this.#state === 'open' && this.now() - this.#openedAt >= this.#cooldownMs) this.#state = 'half-open';
    return this.#state;
  }

  /** When an open breaker lets a probe through, epoch ms (undefined unless open). */
  get reopensAt(): number | undefined {
    return this.state === 'open' ? this.#openedAt + this.#cooldownMs : undefined;
  }

  /** May a request go now? Half-open lets exactly one through (the probe) until it reports. */
  tryAcquire(): boolean {
    const state = this.state;
    if (state === 'closed') return true;
    if (state === 'open' || this.#probing) return false;
    this.#probing = true;
    return true;
  }

  /** The endpoint answered (any answer that is not its weather): closed again, cool-down reset. */
  succeeded(): void {
    this.#state = 'closed';
    this.#failuresInARow = 0;
    this.#probing = false;
    this.#cooldownMs = this.options.cooldownMs;
  }

  /** A fetch ran out of retries on the endpoint's weather (5xx, timeouts, refused connections). */
  failed(): void {
    const wasProbe = this.#probing;
    this.#probing = false;
    this.#failuresInARow++;
    if (wasProbe || this.#state === 'half-open') {
      this.#cooldownMs = Math.min(
        this.#cooldownMs * 2,
        this.options.maxCooldownMs ?? this.options.cooldownMs * 8,
      );
      this.#open();
    } else if (this.#state === 'closed' && this.#failuresInARow >= this.options.failures) {
      this.#open();
    }
  }

  #open(): void {
    this.#state = 'open';
    this.#openedAt = this.now();
  }
}
