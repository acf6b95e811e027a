// Asks an endpoint for one record with the configured query: concurrency capped, requests per second
// capped per endpoint, 429/5xx/timeouts retried with jittered back-off (Retry-After honoured) within a
// budget, and a circuit breaker per endpoint. What it cannot get within its budget it reports as the
// endpoint's weather (a transient error: the stage retries the batch later and dead-letters nothing).

import { type BreakerOptions, CircuitBreaker } from './circuit-breaker.js';
import { type Clock, RateLimiter } from './rate-limiter.js';
import { type BackOff, isRetriableStatus, nextWaitMs, retryAfterMs } from './retry-schedule.js';

export interface FetchSettings {
  /** One request's timeout. */
  readonly timeoutMs: number;
  /** Attempts after the first. */
  readonly retries: number;
  /** All attempts of one fetch and the waits between them, from its first request. */
  readonly budgetMs: number;
  readonly backOff: BackOff;
  /** Requests per second per endpoint (origin). */
  readonly ratePerSecond: number;
  /** Requests in flight at most, all endpoints together. */
  readonly concurrency: number;
  readonly breaker: BreakerOptions;
  /**
   * The most of an answer's body read: past it the answer is given up (never held whole in memory).
   * One record's answer is the size of a delivery, so the stage uses INGEST_BODY_LIMIT.
   */
  readonly maxAnswerBytes: number;
  /** The credentials header, when configured (its value is never logged). */
  readonly header?: { readonly name: string; readonly value: string } | undefined;
}

/** An endpoint's answer: a status that is no weather (2xx, or a 4xx other than 401/403/408/429). */
export interface Answer {
  readonly status: number;
  /**
   * When the request that got this answer was sent (epoch ms). The record is the state at some moment
   * after it, before the answer came: the send time is the fetched event's time, a bound a delivery
   * dated after the query still beats (the answer's arrival could be seconds later).
   */
  readonly sentAt?: number;
  /** Empty when the answer was larger than maxAnswerBytes. */
  readonly body: Buffer;
  /** Set (to maxAnswerBytes) when the answer was larger: not read past it. */
  readonly overLimitBytes?: number;
}

/**
 * The endpoint could not answer within the budget (down, slow, throttling, refusing our credentials),
 * or its breaker is open. `status` makes the stream kit classify it transient (errors.ts): the batch is
 * retried with back-off and nothing is dead-lettered.
 */
export class EndpointUnavailableError extends Error {
  override name = 'EndpointUnavailableError';
  constructor(
    message: string,
    readonly status: 503 | 429 = 503,
  ) {
    super(message);
  }
}

export interface FetcherDeps {
  readonly fetch?: typeof globalThis.fetch;
  readonly now?: Clock;
  readonly sleep?: (ms: number) => Promise<void>;
  readonly random?: () => number;
  /** Instrumentation: `enrich.request` {endpoint, result}, `enrich.breaker` {endpoint} 1/0. */
  readonly instrument?: (event: string, labels: Readonly<Record<string, string>>, value?: number) => void;
}

interface Endpoint {
  readonly limiter: RateLimiter;
  readonly breaker: CircuitBreaker;
  /** What the last failed attempt met: said when the breaker refuses. */
  lastProblem: string;
  /** The endpoint sent a Retry-After: said when the hold leaves no room. */
  retryAfter: boolean;
}

/** Waiters for a slot, in order. */
class Slots {
  #free: number;
  readonly #waiting: (() => void)[] = [];
  constructor(size: number) {
    this.#free = size;
  }
  async acquire(): Promise<void> {
    if (this.#free > 0) {
      this.#free--;
      return;
    }
    await new Promise<void>((resolve) => this.#waiting.push(resolve));
  }
  release(): void {
    const next = this.#waiting.shift();
    if (next) next();
    else this.#free++;
  }
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref?.());

export class Fetcher {
  readonly #endpoints = new Map<string, Endpoint>();
  readonly #slots: Slots;
  readonly #fetch: typeof globalThis.fetch;
  readonly #now: Clock;
  readonly #sleep: (ms: number) => Promise<void>;
  readonly #random: () => number;
  readonly #instrument: NonNullable<FetcherDeps['instrument']>;

  constructor(
    private readonly settings: FetchSettings,
    deps: FetcherDeps = {},
  ) {
    this.#slots = new Slots(settings.concurrency);
    this.#fetch = deps.fetch ?? globalThis.fetch;
    this.#now = deps.now ?? Date.now;
    this.#sleep = deps.sleep ?? defaultSleep;
    this.#random = deps.random ?? Math.random;
    this.#instrument = deps.instrument ?? (() => undefined);
  }

  #endpoint(origin: string): Endpoint {
    let endpoint = this.#endpoints.get(origin);
    if (endpoint === undefined) {
      endpoint = {
        limiter: new RateLimiter(this.settings.ratePerSecond, undefined, this.#now),
        breaker: new CircuitBreaker(this.settings.breaker, this.#now),
        lastProblem: 'no answer',
        retryAfter: false,
      };
      this.#endpoints.set(origin, endpoint);
    }
    return endpoint;
  }

  /** The breaker state of each endpoint asked so far (for readiness and tests). */
  breakerStates(): Record<string, string> {
    return Object.fromEntries([...this.#endpoints].map(([origin, e]) => [origin, e.breaker.state]));
  }

  /**
   * POSTs `{query, variables: {id}}` to `api` and returns the answer, or throws EndpointUnavailableError.
   * Once `signal` aborts (nobody will read the answer: its batch was given up), no further request is
   * sent for it; one already in flight runs out, so a breaker probe still reports.
   */
  async fetch(api: string, query: string, id: string, signal?: AbortSignal): Promise<Answer> {
    const origin = new URL(api).origin;
    const endpoint = this.#endpoint(origin);
    // Refused at once while open: no slot taken, no request sent.
    if (endpoint.breaker.state === 'open') throw this.#open(origin, endpoint);
    await this.#slots.acquire();
    try {
      signal?.throwIfAborted();
      return await this.#attempts(
        api,
        origin,
        endpoint,
        JSON.stringify({ query, variables: { id } }),
        signal,
      );
    } finally {
      this.#slots.release();
    }
  }

  #open(origin: string, endpoint: Endpoint): EndpointUnavailableError {
    const at = endpoint.breaker.reopensAt;
    const when =
      at === undefined ? '' : `; next probe in ${Math.max(0, Math.round((at - this.#now()) / 1000))} s`;
    return new EndpointUnavailableError(`${origin} is unavailable (${endpoint.lastProblem})${when}`);
  }

  async #attempts(
    api: string,
    origin: string,
    endpoint: Endpoint,
    body: string,
    signal: AbortSignal | undefined,
  ): Promise<Answer> {
    const { timeoutMs, retries, budgetMs, backOff } = this.settings;
    const deadline = this.#now() + budgetMs;
    for (let attempt = 0; ; attempt++) {
      const wait = endpoint.limiter.reserve();
      if (this.#now() + wait >= deadline) {
        endpoint.limiter.release();
        this.#instrument('enrich.request', { endpoint: origin, result: 'rate-limited' });
        throw new EndpointUnavailableError(
          `${origin}: its rate limit (${this.settings.ratePerSecond}/s${endpoint.retryAfter ? `, and its Retry-After after ${endpoint.lastProblem}` : ''}) leaves no room within the ${budgetMs} ms budget`,
          429,
        );
      }
      if (wait > 0) await this.#sleep(wait);
      if (signal?.aborted) {
        endpoint.limiter.release();
        signal.throwIfAborted();
      }
      if (!endpoint.breaker.tryAcquire()) throw this.#open(origin, endpoint);
      const startedAt = this.#now();
      const outcome = await this.#post(api, body, Math.max(1, Math.min(timeoutMs, deadline - startedAt)));
      this.#instrument('enrich.request.seconds', { endpoint: origin }, (this.#now() - startedAt) / 1000);
      if ('answer' in outcome) {
        endpoint.breaker.succeeded();
        endpoint.retryAfter = false;
        this.#instrument('enrich.breaker', { endpoint: origin }, 0);
        this.#instrument('enrich.request', { endpoint: origin, result: 'answered' });
        return { ...outcome.answer, sentAt: startedAt };
      }
      endpoint.lastProblem = outcome.problem;
      const throttled = outcome.status === 429;
      // A 503's Retry-After as much as a 429's: the endpoint said when to come back, to every fetch.
      if (outcome.retryAfterMs !== undefined) {
        endpoint.limiter.holdUntil(this.#now() + outcome.retryAfterMs);
        endpoint.retryAfter = true;
      }
      this.#instrument('enrich.request', { endpoint: origin, result: throttled ? 'throttled' : 'failed' });
      const waitMs = nextWaitMs(attempt + 1, backOff, outcome.retryAfterMs, this.#random);
      const probe = endpoint.breaker.state === 'half-open';
      if (probe || attempt >= retries || this.#now() + waitMs >= deadline) {
        // Throttling says the endpoint is up: it never opens the breaker.
        if (throttled) endpoint.breaker.succeeded();
        else endpoint.breaker.failed();
        const open = endpoint.breaker.state === 'open';
        this.#instrument('enrich.breaker', { endpoint: origin }, open ? 1 : 0);
        throw new EndpointUnavailableError(
          `${origin}: ${outcome.problem} after ${attempt + 1} attempt${attempt === 0 ? '' : 's'}${open ? ' (circuit open)' : ''}`,
          throttled ? 429 : 503,
        );
      }
      await this.#sleep(waitMs);
    }
  }

  async #post(
    api: string,
    body: string,
    timeoutMs: number,
  ): Promise<{ answer: Answer } | { problem: string; status?: number; retryAfterMs?: number | undefined }> {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/json',
    };
    const { header } = this.settings;
    if (header !== undefined) headers[header.name] = header.value;
    let response: Response;
    let bytes: Buffer | undefined;
    try {
      // The timeout covers the body too: an answer that trickles in byte by byte is cut off with it.
      response = await this.#fetch(api, {
        method: 'POST',
        headers,
        body,
        redirect: 'error',
        signal: AbortSignal.timeout(timeoutMs),
      });
      bytes = await readAtMost(response, this.settings.maxAnswerBytes);
    } catch (error) {
      const e = error as { name?: string; message?: string; cause?: { code?: string; message?: string } };
      if (e.name === 'TimeoutError' || e.name === 'AbortError')
        return { problem: `no answer within ${timeoutMs} ms` };
      return { problem: `no answer (${e.cause?.code ?? e.cause?.message ?? e.message ?? 'unknown'})` };
    }
    const status = response.status;
    // 401/403: our credentials are refused; every record would fail alike, so it is weather, not an answer.
    if (isRetriableStatus(status) || status === 401 || status === 403)
      return {
        problem: `${status} ${response.statusText}`.trim(),
        status,
        retryAfterMs: retryAfterMs(response.headers.get('retry-after'), this.#now()),
      };
    if (bytes === undefined)
      return { answer: { status, body: Buffer.alloc(0), overLimitBytes: this.settings.maxAnswerBytes } };
    return { answer: { status, body: bytes } };
  }
}

/** The body, or undefined when it is longer than `limit` bytes (read no further, the rest cancelled). */
async function readAtMost(response: Response, limit: number): Promise<Buffer | undefined> {
  const declared = Number(response.headers.get('content-length') ?? Number.NaN);
  if (declared > limit || response.body === null) {
    await response.body?.cancel().catch(() => undefined);
    return declared > limit ? undefined : Buffer.alloc(0);
  }
  const chunks: Uint8Array[] = [];
  let length = 0;
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return Buffer.concat(chunks, length);
    length += value.byteLength;
    if (length > limit) {
      await reader.cancel().catch(() => undefined);
      return undefined;
    }
    chunks.push(value);
  }
}
