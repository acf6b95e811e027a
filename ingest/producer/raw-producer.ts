// Stores raw records: one batcher in front of one idempotent producer, replaced when it fails.
import type { Logger } from '../../runtime/log.js';
import {
  INGEST_ERR_CLOSING,
  INGEST_ERR_DEADLINE,
  INGEST_ERR_OVERLOADED,
  INGEST_ERR_UNAVAILABLE,
} from '../errors.js';
import { Batcher, BatchRejected, type BatchStats } from './batcher.js';
import type { ConnectProducer, ProducerPort, RawRecord, RecordOutcomes } from './port.js';

/** Per-record bytes beyond key and value in a Kafka record batch (varints, attributes, deltas). */
const RECORD_OVERHEAD = 32;

export interface RawProducerOptions {
  connect: ConnectProducer;
  logger: Logger;
  /** Names this producer in its log lines (the quarantine has one of its own). */
  component?: string;
  lingerMs: number;
  maxBatchRecords: number;
  /** At most the topic's max.message.bytes: one produce call holds one record batch per partition. */
  maxBatchBytes: number;
  maxPendingBytes: number;
  /** Batches in flight at once (the batcher's maxInFlight); 1 by default. */
  maxInFlight?: number;
  /** A request's answer comes by then: 200 if acknowledged, else 503. */
  deadlineMs: number;
  /** A send still unanswered after this abandons its producer; defaults to the deadline. */
  sendTimeoutMs?: number;
  /** A connection attempt still pending after this is abandoned; defaults to twice the deadline. */
  connectTimeoutMs?: number;
  /** Back-off between connection attempts, and between replacements while no write succeeds. */
  reconnectInitialMs?: number;
  reconnectMaxMs?: number;
  /** Checks the cluster while no sends succeed, so readiness notices an outage without traffic. */
  probe?: () => Promise<void>;
  probeIntervalMs?: number;
  onBatch?: (stats: BatchStats) => void;
  onReplaced?: (reason: string) => void;
}

export class RawProducer {
  private readonly batcher: Batcher<RawRecord>;
  private readonly log: Logger;
  private current: ProducerPort | undefined;
  private connecting = false;
  private healthy = false;
  private closed = false;
  /** Since when no producer could write (undefined while one can). */
  private unavailableSince: number | undefined = Date.now();
  private lastSuccess = 0;
  /** Producers replaced since a write last succeeded: each replacement waits longer for the next. */
  private replacements = 0;
  /** Records refused were logged at warn; the next ones at debug until a batch is stored whole. */
  private refusing = false;
  private connected: Array<() => void> = [];
  private probeTimer: NodeJS.Timeout | undefined;
  private backoffTimer: { timer: NodeJS.Timeout; wake: () => void } | undefined;

  constructor(private readonly options: RawProducerOptions) {
    this.log = options.logger.child({ component: options.component ?? 'raw-producer' });
    this.batcher = new Batcher<RawRecord>({
      lingerMs: options.lingerMs,
      maxBatchRecords: options.maxBatchRecords,
      maxBatchBytes: options.maxBatchBytes,
      maxPendingBytes: options.maxPendingBytes,
      ...(options.maxInFlight === undefined ? {} : { maxInFlight: options.maxInFlight }),
      ready: () => this.whenConnected(),
      send: (records) => this.send(records),
      ...(options.onBatch ? { onBatch: options.onBatch } : {}),
    });
  }

  /** Starts connecting in the background; readiness turns true once a producer is connected. */
  start(): void {
    void this.reconnect();
    const every = this.options.probeIntervalMs ?? 5_000;
    if (this.options.probe) {
      this.probeTimer = setInterval(() => void this.runProbe(), every);
      this.probeTimer.unref();
    }
  }

  /**
   * Whether a producer is connected and can write: the first producer once connected; after a failed
   * write (or a replacement) only once a write or the probe succeeds again.
   */
  get ready(): boolean {
    return !this.closed && this.current !== undefined && this.healthy;
  }

  get pendingBytes(): number {
    return this.batcher.pendingBytes;
  }

  /** Resolves once the record is acknowledged; rejects with an INGEST_ERR_* (503) otherwise. */
  async store(record: RawRecord): Promise<void> {
    if (this.closed) throw new INGEST_ERR_CLOSING();
    const { deadlineMs } = this.options;
    // Known unable to write for longer than a deadline: waiting out another deadline would only hold the
    // client. With a producer connected, one request at a time still goes through (nothing else pending),
    // so that a write can show Kafka is back even where no probe runs (the quarantine's producer).
    if (
      this.unavailableSince !== undefined &&
      Date.now() - this.unavailableSince > deadlineMs &&
      (this.current === undefined || (!this.healthy && this.batcher.pendingBytes > 0))
    ) {
      throw new INGEST_ERR_UNAVAILABLE();
    }
    const bytes = record.value.length + Buffer.byteLength(record.key) + RECORD_OVERHEAD;
    // The deadline counts from when the request arrived (the record's timestamp), not from now.
    const remainingMs = Math.max(1, deadlineMs - Math.max(0, Date.now() - record.timestamp));
    try {
      await this.batcher.add(record, bytes, remainingMs);
    } catch (error) {
      if (error instanceof BatchRejected) {
        if (error.reason === 'full') throw new INGEST_ERR_OVERLOADED();
        if (error.reason === 'closed') throw new INGEST_ERR_CLOSING();
        throw new INGEST_ERR_DEADLINE(deadlineMs);
      }
      throw new INGEST_ERR_UNAVAILABLE({ cause: error });
    }
  }

  /** Stops accepting, sends what is queued (bounded by the deadline), then disconnects. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.probeTimer) clearInterval(this.probeTimer);
    this.backoffTimer?.wake();
    this.wakeWaiters();
    await this.batcher.close();
    const producer = this.current;
    this.current = undefined;
    this.healthy = false;
    await producer?.close();
  }

  private whenConnected(): Promise<void> {
    // Closing with no producer: let the batcher go on, so its send fails and what is queued is answered.
    if (this.current || this.closed) return Promise.resolve();
    return new Promise((resolve) => this.connected.push(resolve));
  }

  private wakeWaiters(): void {
    const waiters = this.connected;
    this.connected = [];
    for (const resolve of waiters) resolve();
  }

  /** Sends one batch; resolves with each record's own outcome, rejects when the send as a whole failed. */
  private async send(records: RawRecord[]): Promise<RecordOutcomes> {
    const producer = this.current;
    if (!producer) throw new Error('no producer connected');
    const timeoutMs = this.options.sendTimeoutMs ?? this.options.deadlineMs;
    let timer: NodeJS.Timeout | undefined;
    const sending = producer.send(records);
    let outcomes: RecordOutcomes;
    try {
      outcomes = await Promise.race([
        sending,
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`send not acknowledged within ${timeoutMs} ms`)),
            timeoutMs,
          );
        }),
      ]);
      // Never an answer for a record the producer did not report on.
      if (outcomes?.length !== records.length)
        throw new Error(`send reported ${outcomes?.length} outcomes for ${records.length} records`);
    } catch (error) {
      // The abandoned send may still settle later; its outcome no longer matters to anyone.
      sending.catch(() => undefined);
      this.replace(producer, error);
      throw error;
    } finally {
      clearTimeout(timer);
    }
    const refused = outcomes.filter((outcome) => outcome !== undefined);
    // A replaced producer's late answer says nothing about the one that writes now.
    if (this.current === producer) {
      if (refused.length < records.length) this.wrote();
      else this.writeFailed();
    }
    if (refused.length > 0) this.logRefused(refused, records.length);
    else this.refusing = false;
    return outcomes;
  }

  /** A record acknowledged: the producer can write. */
  private wrote(): void {
    this.healthy = true;
    this.unavailableSince = undefined;
    this.lastSuccess = Date.now();
    this.replacements = 0;
  }

  /**
   * Every record of a send refused by the broker (its partitions under min.insync.replicas, writes not
   * authorized, records too large): the producer itself is sound, so it is kept, but it cannot write.
   */
  private writeFailed(): void {
    this.healthy = false;
    this.unavailableSince ??= Date.now();
  }

  /** Refused records are answered 503 one by one; the log says so once, then at debug until a batch is stored whole. */
  private logRefused(refused: ReadonlyArray<Error | undefined>, records: number): void {
    const first = refused[0];
    const reason = first instanceof Error ? `${first.name}: ${first.message}` : String(first);
    const line = { refused: refused.length, records, reason };
    if (this.refusing) this.log.debug(line, 'records not stored');
    else this.log.warn(line, 'records not stored; the producer is kept');
    this.refusing = true;
  }

  /**
   * A send that failed as a whole (no answer in time, a fatal error: out-of-order sequence, unknown
   * producer id) replaces the producer: an idempotent producer's sequence state cannot be trusted after
   * it. A record the broker refused does not (send() answers that record alone). A new producer gets a
   * new producer id; it counts as able to write only once a write (or the probe) succeeds, and
   * replacements wait longer each time until then, so a cluster that takes connections but no writes
   * does not see producers created in a tight loop.
   */
  private replace(producer: ProducerPort, error: unknown): void {
    if (this.current !== producer) return;
    this.current = undefined;
    this.healthy = false;
    this.unavailableSince ??= Date.now();
    this.replacements++;
    const reason = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    this.log.warn({ reason }, 'producer failed; replacing it');
    this.options.onReplaced?.(reason);
    producer.close().catch((closeError: unknown) => {
      this.log.debug({ err: closeError }, 'closing the failed producer failed');
    });
    if (!this.closed) void this.reconnect(this.replacementDelay());
  }

  /** The first replacement after a successful write is at once; each further one waits twice as long, capped. */
  private replacementDelay(): number {
    if (this.replacements <= 1) return 0;
    const initial = this.options.reconnectInitialMs ?? 100;
    const max = this.options.reconnectMaxMs ?? 2_000;
    return Math.min(max, initial * 2 ** Math.min(this.replacements - 2, 20));
  }

  private async reconnect(waitMs = 0): Promise<void> {
    if (this.connecting) return;
    this.connecting = true;
    let delay = this.options.reconnectInitialMs ?? 100;
    const maxDelay = this.options.reconnectMaxMs ?? 2_000;
    try {
      if (waitMs > 0) {
        this.log.info({ retryInMs: waitMs }, 'connecting a new producer after a pause');
        await this.sleep(waitMs);
      }
      while (!this.closed) {
        try {
          const producer = await this.connectWithin(
            this.options.connectTimeoutMs ?? 2 * this.options.deadlineMs,
          );
          if (this.closed) {
            await producer.close();
            return;
          }
          this.current = producer;
          // At start a connected producer is taken as able to write; a replacement must show it.
          if (this.replacements === 0) {
            this.healthy = true;
            this.unavailableSince = undefined;
          }
          this.log.info('producer connected');
          this.wakeWaiters();
          return;
        } catch (error) {
          this.log.warn({ reason: (error as Error).message, retryInMs: delay }, 'cannot connect a producer');
          await this.sleep(delay);
          delay = Math.min(delay * 2, maxDelay);
        }
      }
    } finally {
      this.connecting = false;
    }
  }

  /** A connection attempt that hangs must not stop the next one: it is abandoned (and closed if it ever connects). */
  private async connectWithin(timeoutMs: number): Promise<ProducerPort> {
    let port: ProducerPort | undefined;
    let failedEarly: Error | undefined;
    // A producer that breaks by itself (a fatal error) is replaced at once, not at its next send.
    const attempt = this.options.connect((error) => {
      if (port) this.replace(port, error);
      else failedEarly ??= error;
    });
    let timer: NodeJS.Timeout | undefined;
    try {
      port = await Promise.race([
        attempt,
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no connection within ${timeoutMs} ms`)), timeoutMs);
        }),
      ]);
    } catch (error) {
      attempt.then((late) => late.close()).catch(() => undefined);
      throw error;
    } finally {
      clearTimeout(timer);
    }
    if (failedEarly) {
      await port.close().catch(() => undefined);
      throw failedEarly;
    }
    return port;
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.backoffTimer = undefined;
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.backoffTimer = { timer, wake };
    });
  }

  private async runProbe(): Promise<void> {
    const every = this.options.probeIntervalMs ?? 5_000;
    if (this.closed || !this.current || Date.now() - this.lastSuccess < every) return;
    const producer = this.current;
    try {
      await this.options.probe!();
      // The probe reads metadata, not writes; it brings back readiness, but the replacement back-off
      // resets only with a write.
      if (this.current !== producer) return;
      this.healthy = true;
      this.unavailableSince = undefined;
      this.lastSuccess = Date.now();
    } catch (error) {
      if (this.current !== producer) return;
      if (this.healthy)
        this.log.warn({ reason: (error as Error).message }, 'cluster probe failed; not ready');
      this.healthy = false;
    }
  }
}
