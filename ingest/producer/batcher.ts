// Gathers concurrent items into bounded batches for a sender that takes one batch at a time.
//
// Each caller gets a promise for its own item: it resolves only when the sender reports that item
// stored, and rejects when the sender reports that item failed (or the whole batch failed), when the
// item's deadline passed first, when the pending bytes are over their cap (at once), or after close().

export type RejectReason = 'full' | 'deadline' | 'closed';

export class BatchRejected extends Error {
  override name = 'BatchRejected';
  constructor(
    readonly reason: RejectReason,
    message: string,
  ) {
    super(message);
  }
}

export interface BatchStats {
  records: number;
  bytes: number;
  durationMs: number;
  /** Items of the batch not stored (all of them when the send as a whole failed). */
  failed: number;
  /** The whole send's failure, else the first failed item's. */
  error?: unknown;
}

export interface BatcherOptions<T> {
  /** How long the oldest queued item may wait for company before its batch goes (0: the next tick). */
  lingerMs: number;
  maxBatchRecords: number;
  /** A batch stops before the item that would take it past this; a single larger item goes alone. */
  maxBatchBytes: number;
  /** Queued plus in-flight bytes above which add() rejects at once (one item is always accepted). */
  maxPendingBytes: number;
  /**
   * Batches sent at once at most (default 1). Above 1 the next batch goes while earlier ones await
   * their acknowledgements, so one slow answer does not hold every request queued behind it.
   */
  maxInFlight?: number;
  /**
   * Sends one batch; called again before earlier calls settled only up to maxInFlight. Resolves with
   * each item's own outcome in order (undefined: stored), or undefined when all were stored; rejects
   * when the batch as a whole failed.
   */
  send: (items: T[]) => Promise<ReadonlyArray<unknown> | undefined>;
  /** Awaited before each batch is taken from the queue: items that expire meanwhile are never sent. */
  ready?: () => Promise<void>;
  onBatch?: (stats: BatchStats) => void;
}

interface Entry<T> {
  item: T | undefined;
  bytes: number;
  enqueuedAt: number;
  state: 'queued' | 'sending' | 'dropped';
  settled: boolean;
  timer: NodeJS.Timeout | undefined;
  resolve: () => void;
  reject: (error: unknown) => void;
}

export class Batcher<T> {
  private queue: Entry<T>[] = [];
  private head = 0;
  private queuedCount = 0;
  private queuedBytes = 0;
  private inFlightBytes = 0;
  /** Batches sent and not yet settled. */
  private inFlight = 0;
  /**
   * A flush is due or waiting for `ready()`: one at a time, so batches are taken from the queue in
   * order and a batch is not split by two flushes racing for it.
   */
  private starting = false;
  private closed = false;
  private lingerTimer: NodeJS.Timeout | undefined;
  private drained: Array<() => void> = [];

  constructor(private readonly options: BatcherOptions<T>) {}

  /** Bytes held: queued plus in flight. */
  get pendingBytes(): number {
    return this.queuedBytes + this.inFlightBytes;
  }

  get queued(): number {
    return this.queuedCount;
  }

  /** Queues an item; the promise settles with the item's own batch (or its deadline, timeoutMs from now). */
  add(item: T, bytes: number, timeoutMs?: number): Promise<void> {
    if (this.closed) return Promise.reject(new BatchRejected('closed', 'closed'));
    const pending = this.pendingBytes;
    if (pending > 0 && pending + bytes > this.options.maxPendingBytes) {
      return Promise.reject(
        new BatchRejected('full', `pending bytes ${pending} + ${bytes} over ${this.options.maxPendingBytes}`),
      );
    }
    return new Promise<void>((resolve, reject) => {
      const entry: Entry<T> = {
        item,
        bytes,
        enqueuedAt: performance.now(),
        state: 'queued',
        settled: false,
        timer: undefined,
        resolve,
        reject,
      };
      if (timeoutMs !== undefined) entry.timer = setTimeout(() => this.expire(entry, timeoutMs), timeoutMs);
      this.queue.push(entry);
      this.queuedCount++;
      this.queuedBytes += bytes;
      this.schedule();
    });
  }

  /** Stops accepting, sends what is queued without lingering, and resolves when nothing is pending. */
  async close(): Promise<void> {
    this.closed = true;
    this.schedule();
    await this.drain();
  }

  /** Resolves when nothing is queued or in flight. */
  drain(): Promise<void> {
    if (this.idle) return Promise.resolve();
    return new Promise((resolve) => this.drained.push(resolve));
  }

  private expire(entry: Entry<T>, timeoutMs: number): void {
    entry.timer = undefined;
    if (entry.settled) return;
    if (entry.state === 'queued') {
      // Never sent: take it out now so its bytes (the body) can be collected during a long outage.
      this.dropQueued(entry);
    }
    this.settle(entry, new BatchRejected('deadline', `not sent within ${timeoutMs} ms`));
    this.compactIfSparse();
    this.notifyIfDrained();
  }

  private dropQueued(entry: Entry<T>): void {
    entry.state = 'dropped';
    entry.item = undefined;
    this.queuedCount--;
    this.queuedBytes -= entry.bytes;
  }

  private settle(entry: Entry<T>, error?: unknown): void {
    if (entry.settled) return;
    entry.settled = true;
    if (entry.timer) clearTimeout(entry.timer);
    entry.timer = undefined;
    if (error === undefined) entry.resolve();
    else entry.reject(error);
  }

  /** Dropped entries stay in the array until passed; rebuild it when they dominate. */
  private compactIfSparse(): void {
    const live = this.queue.length - this.head;
    if (live > 1024 && this.queuedCount * 2 < live) {
      this.queue = this.queue.slice(this.head).filter((e) => e.state === 'queued');
      this.head = 0;
    }
  }

  private get idle(): boolean {
    return this.queuedCount === 0 && this.inFlight === 0 && !this.starting;
  }

  private schedule(): void {
    if (this.starting || this.inFlight >= (this.options.maxInFlight ?? 1) || this.queuedCount === 0) return;
    const { lingerMs, maxBatchRecords, maxBatchBytes } = this.options;
    const oldest = this.oldestQueued();
    const waited = oldest ? performance.now() - oldest.enqueuedAt : 0;
    const full = this.queuedCount >= maxBatchRecords || this.queuedBytes >= maxBatchBytes;
    if (full || this.closed || waited >= lingerMs) {
      if (this.lingerTimer) clearTimeout(this.lingerTimer);
      this.lingerTimer = undefined;
      // Not synchronously: callers adding in the same tick join this batch.
      this.starting = true;
      setImmediate(() => void this.flush());
      return;
    }
    if (!this.lingerTimer) {
      this.lingerTimer = setTimeout(
        () => {
          this.lingerTimer = undefined;
          this.schedule();
        },
        Math.max(1, Math.ceil(lingerMs - waited)),
      );
    }
  }

  private oldestQueued(): Entry<T> | undefined {
    while (this.head < this.queue.length && this.queue[this.head]!.state !== 'queued') this.head++;
    return this.queue[this.head];
  }

  /** Takes the next batch off the queue; its bytes count as in flight until it settles. */
  private take(): { batch: Entry<T>[]; bytes: number } {
    const { maxBatchRecords, maxBatchBytes } = this.options;
    const batch: Entry<T>[] = [];
    let bytes = 0;
    while (batch.length < maxBatchRecords && this.head < this.queue.length) {
      const entry = this.queue[this.head]!;
      if (entry.state !== 'queued') {
        this.head++;
        continue;
      }
      if (batch.length > 0 && bytes + entry.bytes > maxBatchBytes) break;
      this.head++;
      entry.state = 'sending';
      this.queuedCount--;
      this.queuedBytes -= entry.bytes;
      bytes += entry.bytes;
      batch.push(entry);
    }
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
    this.inFlightBytes += bytes;
    return { batch, bytes };
  }

  private async flush(): Promise<void> {
    let taken: { batch: Entry<T>[]; bytes: number };
    try {
      // A gate that fails lets the send below fail too, so the items get that answer instead of a hang.
      if (this.options.ready) await this.options.ready().catch(() => undefined);
      taken = this.take();
    } finally {
      this.starting = false;
    }
    const { batch, bytes } = taken;
    if (batch.length === 0) {
      this.schedule();
      this.notifyIfDrained();
      return;
    }
    this.inFlight++;
    try {
      // The next batch may start (up to maxInFlight) while this one awaits its acknowledgements.
      this.schedule();
      const started = performance.now();
      let failure: unknown;
      let outcomes: ReadonlyArray<unknown> | undefined;
      try {
        outcomes = await this.options.send(batch.map((e) => e.item as T));
      } catch (error) {
        failure = error ?? new Error('send failed');
      }
      // Each item settles with its own outcome: one item refused does not fail the others.
      let failed = 0;
      let firstError = failure;
      batch.forEach((entry, index) => {
        const error = failure ?? outcomes?.[index];
        if (error !== undefined) {
          failed++;
          firstError ??= error;
        }
        this.settle(entry, error);
      });
      this.options.onBatch?.({
        records: batch.length,
        bytes,
        durationMs: performance.now() - started,
        failed,
        ...(firstError === undefined ? {} : { error: firstError }),
      });
    } finally {
      this.inFlight--;
      this.inFlightBytes -= bytes;
      this.schedule();
      this.notifyIfDrained();
    }
  }

  private notifyIfDrained(): void {
    if (!this.idle) return;
    const waiters = this.drained;
    this.drained = [];
    for (const resolve of waiters) resolve();
  }
}
