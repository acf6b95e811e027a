// Encodes values (raw envelopes; quarantined requests) through the schema registry, once their subject is registered.
import type { Logger } from '../../runtime/log.js';
import type { RawEnvelope } from '../../schemas/raw-envelope.js';
import type { Serde } from '../../schemas/serde.js';
import { INGEST_ERR_UNAVAILABLE } from '../errors.js';

export interface EnvelopeEncoder<T = RawEnvelope> {
  /** False until the schema is registered: /readyz reports it, requests get 503. */
  readonly ready: boolean;
  /** A Buffer at once once the schema is cached (no promise per request), else a promise of one. */
  encode(value: T): Buffer | Promise<Buffer>;
}

export interface RegistryEncoderOptions {
  serde: Pick<Serde, 'register' | 'encode' | 'encodeCached'>;
  subject: string;
  /** The Avro schema text (schemas/raw-envelope.avsc, or the quarantine's). */
  schema: string;
  logger: Logger;
  retryInitialMs?: number;
  retryMaxMs?: number;
}

/** Registers the subject in the background (retrying while the registry is away) and encodes with its id. */
export class RegistryEncoder<T = RawEnvelope> implements EnvelopeEncoder<T> {
  private schemaId: number | undefined;
  private stopped = false;
  private retryTimer: NodeJS.Timeout | undefined;

  constructor(private readonly options: RegistryEncoderOptions) {}

  get ready(): boolean {
    return this.schemaId !== undefined;
  }

  /** Resolves once registered; never rejects (it retries until stop()). */
  async start(): Promise<void> {
    const { serde, subject, schema, logger } = this.options;
    let delay = this.options.retryInitialMs ?? 250;
    while (!this.stopped && this.schemaId === undefined) {
      try {
        this.schemaId = await serde.register(subject, schema);
        logger.info({ subject, schemaId: this.schemaId }, 'value schema registered');
      } catch (error) {
        logger.warn(
          { subject, reason: (error as Error).message, retryInMs: delay },
          'cannot register the schema',
        );
        await new Promise<void>((resolve) => {
          this.retryTimer = setTimeout(resolve, delay);
        });
        delay = Math.min(delay * 2, this.options.retryMaxMs ?? 5_000);
      }
    }
  }

  stop(): void {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
  }

  encode(value: T): Buffer | Promise<Buffer> {
    if (this.schemaId === undefined) return Promise.reject(new INGEST_ERR_UNAVAILABLE());
    // The library's path for the first value (it fetches the schema) and for any value the cached
    // writer refuses, so its error message is the one a caller sees.
    const { serde } = this.options;
    return serde.encodeCached(this.schemaId, value) ?? serde.encode(this.schemaId, value);
  }
}
