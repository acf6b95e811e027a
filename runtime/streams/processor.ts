// What a stream processor sees (Kafka Streams' Processor API, small): records in, forward out, stores, punctuation.
import type { StateStore } from './store.js';

/** One input record, its value already deserialized by the topology's source. */
export interface InputRecord<V> {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
  readonly key: string | null;
  readonly value: V;
  /** The Kafka record timestamp, epoch ms: what stream time follows. */
  readonly timestamp: number;
  readonly headers: Readonly<Record<string, string>>;
}

export interface ForwardOptions {
  /** Write to this partition number instead of the sink's choice (key hash, or the input's partition). */
  readonly partition?: number;
  /** The output record's timestamp; defaults to the input record's. */
  readonly timestamp?: number;
  readonly headers?: Readonly<Record<string, string>>;
}

/** Called with the partition's stream time when it has advanced by the scheduled interval. */
export type Punctuator = (streamTime: number) => void;

/**
 * What a processor may do. It never sees a Kafka client: forwarded records and store writes go out
 * in the batch's transaction (or not at all), decided by the kit.
 */
export interface ProcessorContext {
  readonly topic: string;
  readonly partition: number;
  /** The largest record timestamp seen on this partition, restored state included; 0 before any. */
  readonly streamTime: number;
  /** Sends a record to a sink of the topology, by sink name; a null value is a tombstone. */
  forward(sink: string, key: string, value: unknown, options?: ForwardOptions): void;
  getStore<S extends StateStore>(name: string): S;
  /**
   * A stream-time punctuation (never wall-clock: a replay of months decides as live did). Runs after
   * a batch commits, whenever stream time has moved `intervalMs` past the previous run.
   */
  schedule(intervalMs: number, punctuator: Punctuator): void;
  /** A namespaced instrumentation event (`processor.dedupe.duplicate`); the app's metrics count them. */
  instrument(event: string, labels?: Readonly<Record<string, string>>, value?: number): void;
}

/** One per input partition, created when the partition is assigned and restored. */
export interface Processor<V> {
  init(context: ProcessorContext): void;
  /** Synchronous on purpose: everything it decides is written in the batch's one transaction. */
  process(record: InputRecord<V>): void;
  close?(): void;
}
