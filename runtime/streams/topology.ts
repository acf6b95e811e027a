// A stream app as data (Kafka Streams' Topology): sources → one processor → sinks, with its stores.
// One topology.ts per processor app builds it from topic names, so replay reuses it with other names.
import type { InputRecord, Processor, ProcessorContext } from './processor.js';
import type { StoreSpec } from './store.js';

/** A Kafka message as the kit hands it to a deserializer. */
export interface SourceMessage {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly timestamp: number;
}

export interface SourceNode<V> {
  readonly topic: string;
  /**
   * Turns the bytes into the processor's input. Data it cannot read must come back as a value the
   * processor handles (a poison record goes to the DLQ and never stops its partition); a throw means
   * the infrastructure failed (the registry is down) and the batch is retried. A value (not a promise)
   * is used at once: the hot path does not wait a microtask per record.
   */
  deserialize(message: SourceMessage): V | Promise<V>;
  /**
   * Told each batch's new records of running partitions before the first is deserialized, so a source
   * whose reading waits on something slow (the enrich stage's fetches) can start them all at once.
   * `deserialize` is still called for each, in order; what it returns decides.
   */
  readAhead?(messages: readonly SourceMessage[]): void;
  /**
   * The value to hand the dead-letter hook for a record whose deserialize failed deterministically
   * RECORD_ATTEMPTS times (errors.ts). Without it such a record is skipped, counted and logged.
   */
  poison?(message: SourceMessage, reason: string): V;
}

export interface SinkNode {
  readonly name: string;
  readonly topic: string;
  /** Write each record to the input record's partition number (co-partitioned with the input). */
  readonly copartitioned?: boolean;
  /** Value bytes; null (a tombstone) passes through as null. */
  serialize(value: unknown): Promise<Buffer> | Buffer;
}

export interface Topology<V> {
  /** Names the app: consumer group and transactional ids derive from it. */
  readonly name: string;
  readonly sources: readonly SourceNode<V>[];
  readonly processor: { readonly name: string; create(): Processor<V> };
  readonly stores: readonly StoreSpec[];
  readonly sinks: readonly SinkNode[];
  /**
   * Where a record goes when processing it fails (its processor threw, or an output is larger than
   * its topic accepts): the sink, and the dead letter built from the record. `build` may write to the
   * stores (e.g. remember the id so a retry is a duplicate), in the record's transaction. Without it
   * such a record is logged, counted and skipped. Either way one record never stops its partition.
   */
  readonly deadLetter?: {
    readonly sink: string;
    build(
      record: InputRecord<V>,
      failure: { readonly reason: string; readonly message: string },
      context: ProcessorContext,
    ): { key: string; value: unknown };
  };
}

/** Checks the topology's names once, at start, so a typo fails before any record is read. */
export function validateTopology<V>(topology: Topology<V>): Topology<V> {
  const names = (kind: string, list: readonly { name: string }[]) => {
    const seen = new Set<string>();
    for (const { name } of list) {
      if (seen.has(name)) throw new Error(`topology ${topology.name}: two ${kind}s named ${name}`);
      seen.add(name);
    }
  };
  names('sink', topology.sinks);
  names('store', topology.stores);
  if (topology.deadLetter && !topology.sinks.some((s) => s.name === topology.deadLetter!.sink))
    throw new Error(`topology ${topology.name}: no dead-letter sink named ${topology.deadLetter.sink}`);
  if (topology.sources.length === 0) throw new Error(`topology ${topology.name}: no source`);
  const topics = new Set(topology.sources.map((s) => s.topic));
  if (topics.size !== topology.sources.length)
    throw new Error(`topology ${topology.name}: a topic read twice`);
  return topology;
}
