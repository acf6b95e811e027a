// What ingest needs from Kafka, as small ports: the librdkafka adapter implements them, unit tests fake them.

/** One encoded raw envelope, ready to produce. */
export interface RawRecord {
  /** webhook.id (or sha1:<hex>), UTF-8. */
  key: string;
  /** The registry-framed Avro envelope. */
  value: Buffer;
  /** receivedAt: processors expire state by record time. */
  timestamp: number;
}

/** What became of each record of one send, in order: undefined when acknowledged, else why it was not. */
export type RecordOutcomes = ReadonlyArray<Error | undefined>;

/** One connected idempotent producer. send() is never called again before the previous call settled. */
export interface ProducerPort {
  /**
   * Resolves once every record has its own delivery report (acks=all), with each one's outcome: a record
   * the broker refused fails alone. Rejects only when the producer itself failed (a fatal error).
   */
  send(records: RawRecord[]): Promise<RecordOutcomes>;
  close(): Promise<void>;
}

/**
 * Connects a fresh producer (a new producer id: a replaced producer's sequence state is gone with it).
 * `failed` is called when the producer breaks by itself (a fatal error), between sends or during one.
 */
export type ConnectProducer = (failed: (error: Error) => void) => Promise<ProducerPort>;

/** What the HTTP side needs: store one record (200 only once it resolves), and whether it can. */
export interface RawStore {
  /** Resolves once acknowledged; rejects with an INGEST_ERR_* 503 otherwise. */
  store(record: RawRecord): Promise<void>;
  readonly ready: boolean;
}
