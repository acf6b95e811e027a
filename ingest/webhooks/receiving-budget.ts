// The bytes of request bodies being received at once, bounded for the whole process. A body is read into
// memory before its signature can be checked, so without a bound anyone could hold INGEST_MAX_CONNECTIONS
// × INGEST_BODY_LIMIT (1 GiB by default) with requests that never verify, and the process would run out of
// memory with the genuine deliveries in flight. Past the bound a request is answered 503 with Retry-After
// before its body is read: the platform retries it.

/** A byte budget taken per request as it arrives and given back once its answer is sent or it is dropped. */
export class ReceivingBudget {
  #used = 0;

  constructor(readonly limitBytes: number) {}

  /** Bytes taken by requests still being received or answered. */
  get usedBytes(): number {
    return this.#used;
  }

  /** Takes `bytes`; false (nothing taken) when that would pass the limit. */
  take(bytes: number): boolean {
    if (this.#used + bytes > this.limitBytes) return false;
    this.#used += bytes;
    return true;
  }

  give(bytes: number): void {
    this.#used -= bytes;
  }
}

/**
 * What a request takes: its declared Content-Length, or the body limit when it declares none (chunked);
 * never more than the limit (a larger declared body is refused 413 without being read).
 */
export function bytesToReserve(contentLength: string | undefined, bodyLimit: number): number {
  const declared = contentLength === undefined ? Number.NaN : Number(contentLength);
  return Number.isSafeInteger(declared) && declared >= 0 ? Math.min(declared, bodyLimit) : bodyLimit;
}
