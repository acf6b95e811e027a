// The webhook ids ingest answered with anything but 200 and has not stored since: which deliveries the
// platform is retrying, and how close each is to its give-up 72 hours after the first failure.
// Pure and bounded: the clock is injected, past `maxIds` the least recently failed id is evicted, and
// an id longer than MAX_KEPT_ID_CHARS is kept (and logged) as its digest.
import { createHash } from 'node:crypto';

const HOUR = 3_600_000;

/** The platform retries a non-200 delivery for 72 hours, then drops it (docs/webhook-contract.md). */
export const PLATFORM_RETRY_WINDOW_MS = 72 * HOUR;

/** Longer ids are held as `sha256:<hex>`: the list's memory and its log lines stay bounded per entry. */
export const MAX_KEPT_ID_CHARS = 256;

/** The id as the list holds it: itself when short enough, else its digest. */
export function keptId(webhookId: string): string {
  if (webhookId.length <= MAX_KEPT_ID_CHARS) return webhookId;
  return `sha256:${createHash('sha256').update(webhookId).digest('hex')}`;
}

export interface FailingId {
  readonly source: string;
  readonly webhookId: string;
  /** Epoch ms of the first non-200 answer ingest gave this id. */
  readonly firstFailedAt: number;
  readonly lastFailedAt: number;
  /** Non-200 answers so far. */
  readonly attempts: number;
  /** The HTTP status of the last answer. */
  readonly lastStatus: number;
  /** When a log line last reported this id as long-failing (undefined: never). */
  readonly reportedAt: number | undefined;
}

export interface FailingIdsOptions {
  now?: () => number;
  /** Ids held at most; one more evicts the least recently failed. */
  maxIds?: number;
  /** An id failing this long gets its first log line… */
  reportAfterMs?: number;
  /** …and another at most this often while it keeps failing (not one per request). */
  reportEveryMs?: number;
  /** After this long since its first failure the platform no longer retries an id: it is forgotten. */
  givenUpAfterMs?: number;
}

/** What a failed answer did to the list. */
export interface Failure {
  readonly entry: FailingId;
  /** Whether this id is due a "still failing" log line now. */
  readonly report: boolean;
  /** The id pushed out to make room, if any. */
  readonly evicted: FailingId | undefined;
}

export interface SourceSummary {
  readonly count: number;
  /** firstFailedAt of the longest-failing id. */
  readonly oldestFirstFailedAt: number;
}

export class FailingIds {
  readonly #now: () => number;
  readonly #maxIds: number;
  readonly #reportAfterMs: number;
  readonly #reportEveryMs: number;
  readonly #givenUpAfterMs: number;
  /** Keyed by source and id; Map order is least recently failed first (each failure moves its id last). */
  readonly #ids = new Map<string, FailingId>();

  constructor({
    now = Date.now,
    maxIds = 10_000,
    reportAfterMs = HOUR,
    reportEveryMs = 4 * HOUR,
    givenUpAfterMs = PLATFORM_RETRY_WINDOW_MS,
  }: FailingIdsOptions = {}) {
    if (!Number.isInteger(maxIds) || maxIds < 1)
      throw new RangeError(`maxIds must be a positive integer, got ${maxIds}`);
    this.#now = now;
    this.#maxIds = maxIds;
    this.#reportAfterMs = reportAfterMs;
    this.#reportEveryMs = reportEveryMs;
    this.#givenUpAfterMs = givenUpAfterMs;
  }

  get size(): number {
    return this.#ids.size;
  }

  get(source: string, webhookId: string): FailingId | undefined {
    return this.#ids.get(keyOf(source, keptId(webhookId)));
  }

  /** Records a non-200 answer for an id. */
  failed(source: string, id: string, status: number): Failure {
    const now = this.#now();
    const webhookId = keptId(id);
    const key = keyOf(source, webhookId);
    const known = this.#ids.get(key);
    this.#ids.delete(key);
    let evicted: FailingId | undefined;
    if (known === undefined && this.#ids.size >= this.#maxIds) {
      const [oldestKey, oldest] = this.#ids.entries().next().value!;
      this.#ids.delete(oldestKey);
      evicted = oldest;
    }
    const firstFailedAt = known?.firstFailedAt ?? now;
    const reportedAt = known?.reportedAt;
    const report =
      now - firstFailedAt >= this.#reportAfterMs &&
      (reportedAt === undefined || now - reportedAt >= this.#reportEveryMs);
    const entry: FailingId = {
      source,
      webhookId,
      firstFailedAt,
      lastFailedAt: now,
      attempts: (known?.attempts ?? 0) + 1,
      lastStatus: status,
      reportedAt: report ? now : reportedAt,
    };
    this.#ids.set(key, entry);
    return { entry, report, evicted };
  }

  /** Forgets an id once it is stored (200); returns what it had, if it was failing. */
  stored(source: string, webhookId: string): FailingId | undefined {
    const key = keyOf(source, keptId(webhookId));
    const known = this.#ids.get(key);
    if (known !== undefined) this.#ids.delete(key);
    return known;
  }

  /** Forgets, and returns, the ids failing for longer than the platform retries: it has given up on them. */
  sweep(): FailingId[] {
    const limit = this.#now() - this.#givenUpAfterMs;
    const givenUp: FailingId[] = [];
    for (const [key, entry] of this.#ids) {
      if (entry.firstFailedAt <= limit) {
        this.#ids.delete(key);
        givenUp.push(entry);
      }
    }
    return givenUp;
  }

  /** Failing ids and the first failure of the longest-failing one, per source (only sources with some). */
  bySource(): Map<string, SourceSummary> {
    const summaries = new Map<string, SourceSummary>();
    for (const { source, firstFailedAt } of this.#ids.values()) {
      const known = summaries.get(source);
      summaries.set(source, {
        count: (known?.count ?? 0) + 1,
        oldestFirstFailedAt: Math.min(known?.oldestFirstFailedAt ?? firstFailedAt, firstFailedAt),
      });
    }
    return summaries;
  }

  /** The clock the list runs on (telemetry computes ages with it). */
  now(): number {
    return this.#now();
  }
}

// A NUL cannot appear in a source name (sources.ts), so `<source>\0<id>` never collides.
function keyOf(source: string, webhookId: string): string {
  return `${source}\u0000${webhookId}`;
}
