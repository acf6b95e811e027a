// How much of a source's refused traffic ingest may keep: token buckets per source, one counting
// requests and one counting bytes, so a flood of forged requests cannot fill the cluster.

export interface QuarantineBoundOptions {
  /** Requests each source may have kept per second, on average. */
  requestsPerSecond: number;
  /** Bytes each source may have kept per second, on average. */
  bytesPerSecond: number;
  /** A bucket holds this many seconds of its rate: a quiet source may then keep a burst that large. */
  burstSeconds?: number;
}

export type BoundVerdict = 'keep' | 'over-rate' | 'over-bytes';

interface Buckets {
  requests: number;
  bytes: number;
  /** When the buckets were last refilled, ms. */
  at: number;
}

/**
 * Pure apart from its per-source state: the caller passes the clock. A request is kept only when both
 * buckets hold enough, and then takes from both; a refused one takes nothing, so a flood does not
 * starve the source longer than the flood lasts.
 */
export class QuarantineBound {
  readonly #buckets = new Map<string, Buckets>();
  readonly #requestCapacity: number;
  readonly #byteCapacity: number;

  constructor(private readonly options: QuarantineBoundOptions) {
    const burst = options.burstSeconds ?? 60;
    this.#requestCapacity = Math.max(1, options.requestsPerSecond * burst);
    this.#byteCapacity = options.bytesPerSecond * burst;
  }

  /** Whether a request of `bytes` to `source` may be kept at `nowMs`; takes its share if so. */
  take(source: string, bytes: number, nowMs: number): BoundVerdict {
    const buckets = this.#refill(source, nowMs);
    if (buckets.requests < 1) return 'over-rate';
    if (buckets.bytes < bytes) return 'over-bytes';
    buckets.requests -= 1;
    buckets.bytes -= bytes;
    return 'keep';
  }

  #refill(source: string, nowMs: number): Buckets {
    let buckets = this.#buckets.get(source);
    if (buckets === undefined) {
      // Sources are configured, never taken from the URL: this map is as small as the configuration.
      buckets = { requests: this.#requestCapacity, bytes: this.#byteCapacity, at: nowMs };
      this.#buckets.set(source, buckets);
      return buckets;
    }
    // A clock that steps back refills nothing rather than draining the buckets.
    const elapsed = Math.max(0, nowMs - buckets.at) / 1000;
    buckets.requests = Math.min(
      this.#requestCapacity,
      buckets.requests + elapsed * this.options.requestsPerSecond,
    );
    buckets.bytes = Math.min(this.#byteCapacity, buckets.bytes + elapsed * this.options.bytesPerSecond);
    buckets.at = Math.max(buckets.at, nowMs);
    return buckets;
  }
}
