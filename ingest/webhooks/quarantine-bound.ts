// How much of the refused traffic ingest may keep: token buckets per source, and one over all sources,
// each counting requests and bytes, so a flood of forged requests cannot fill the cluster, nor crowd
// every source out at once.

export interface QuarantineBoundOptions {
  /** Requests each source may have kept per second, on average. */
  requestsPerSecond: number;
  /** Bytes (whole records: key, body, headers, query) each source may have kept per second, on average. */
  bytesPerSecond: number;
  /** All sources together (INGEST_QUARANTINE_TOTAL_*): unbounded beyond the per-source buckets when absent. */
  total?: { requestsPerSecond: number; bytesPerSecond: number };
  /** A bucket holds this many seconds of its rate: a quiet source may then keep a burst that large. */
  burstSeconds?: number;
}

export type BoundVerdict = 'keep' | 'over-rate' | 'over-bytes' | 'over-total';

/** The name of the all-sources bucket; a NUL never appears in a source name. */
const TOTAL = '\u0000total';

class Bucket {
  requests: number;
  bytes: number;
  /** When the bucket was last refilled, ms. */
  at: number;

  constructor(
    readonly requestCapacity: number,
    readonly byteCapacity: number,
    private readonly requestsPerSecond: number,
    private readonly bytesPerSecond: number,
    nowMs: number,
  ) {
    this.requests = requestCapacity;
    this.bytes = byteCapacity;
    this.at = nowMs;
  }

  refill(nowMs: number): this {
    // A clock that steps back refills nothing rather than draining the bucket.
    const elapsed = Math.max(0, nowMs - this.at) / 1000;
    this.requests = Math.min(this.requestCapacity, this.requests + elapsed * this.requestsPerSecond);
    this.bytes = Math.min(this.byteCapacity, this.bytes + elapsed * this.bytesPerSecond);
    this.at = Math.max(this.at, nowMs);
    return this;
  }
}

/**
 * Pure apart from its per-source state: the caller passes the clock. A request is kept only when every
 * bucket it counts against holds enough, and then takes from all; a refused one takes nothing, so a
 * flood does not starve a source longer than the flood lasts.
 */
export class QuarantineBound {
  readonly #buckets = new Map<string, Bucket>();
  readonly #burst: number;

  constructor(private readonly options: QuarantineBoundOptions) {
    this.#burst = options.burstSeconds ?? 60;
  }

  /** Whether a request of `bytes` to `source` may be kept at `nowMs`; takes its share if so. */
  take(source: string, bytes: number, nowMs: number): BoundVerdict {
    const own = this.#bucket(source, nowMs);
    const total = this.#total(nowMs);
    if (own.requests < 1) return 'over-rate';
    if (own.bytes < bytes) return 'over-bytes';
    if (total && (total.requests < 1 || total.bytes < bytes)) return 'over-total';
    for (const bucket of total ? [own, total] : [own]) {
      bucket.requests -= 1;
      bucket.bytes -= bytes;
    }
    return 'keep';
  }

  /**
   * More bytes for a request already kept (its record turned out larger than its body): taken only if
   * every bucket holds them; otherwise the request gives back what it took and is not kept.
   */
  takeMore(source: string, taken: number, more: number, nowMs: number): BoundVerdict {
    const own = this.#bucket(source, nowMs);
    const total = this.#total(nowMs);
    const buckets = total ? [own, total] : [own];
    if (own.bytes >= more && (total === undefined || total.bytes >= more)) {
      for (const bucket of buckets) bucket.bytes -= more;
      return 'keep';
    }
    const verdict = own.bytes < more ? 'over-bytes' : 'over-total';
    for (const bucket of buckets) {
      bucket.requests = Math.min(bucket.requestCapacity, bucket.requests + 1);
      bucket.bytes = Math.min(bucket.byteCapacity, bucket.bytes + taken);
    }
    return verdict;
  }

  #bucket(source: string, nowMs: number): Bucket {
    const known = this.#buckets.get(source);
    if (known) return known.refill(nowMs);
    // Sources are configured, never taken from the URL: this map is as small as the configuration.
    const { requestsPerSecond, bytesPerSecond } = this.options;
    return this.#add(source, requestsPerSecond, bytesPerSecond, nowMs);
  }

  #total(nowMs: number): Bucket | undefined {
    const total = this.options.total;
    if (total === undefined) return undefined;
    return (
      this.#buckets.get(TOTAL)?.refill(nowMs) ??
      this.#add(TOTAL, total.requestsPerSecond, total.bytesPerSecond, nowMs)
    );
  }

  #add(name: string, requestsPerSecond: number, bytesPerSecond: number, nowMs: number): Bucket {
    const bucket = new Bucket(
      Math.max(1, requestsPerSecond * this.#burst),
      bytesPerSecond * this.#burst,
      requestsPerSecond,
      bytesPerSecond,
      nowMs,
    );
    this.#buckets.set(name, bucket);
    return bucket;
  }
}
