// Wraps a stage's topology for replay: records past the replay's end bound, or not matching its
// trigger filter, are skipped (their offsets still advance), and what each record led to is counted.
import type { InputRecord, Processor, ProcessorContext } from '../../runtime/streams/processor.js';
import type { SourceMessage, Topology } from '../../runtime/streams/topology.js';

/** Why a record was not handed to the stage's processor. */
export type SkipReason = 'beyond-bound' | 'filtered';

export type Bounded<V> = { readonly skip: false; readonly value: V } | { readonly skip: SkipReason };

/** What one run of a replay stage did, counting only batches that committed. */
export interface StageCounts {
  /** Records within the bounds handed to the processor. */
  read: number;
  /** Records within the bounds skipped by the trigger filter. */
  filtered: number;
  /** Records written per sink topic. */
  written: Map<string, number>;
  /** Processor instrumentation events by name (processor.dedupe.duplicate, …). */
  events: Map<string, number>;
  /** processor.dedupe.routed events with route dead-lettered, by reason. */
  deadLettered: Map<string, number>;
}

export function emptyCounts(): StageCounts {
  return { read: 0, filtered: 0, written: new Map(), events: new Map(), deadLettered: new Map() };
}

const add = (map: Map<string, number>, key: string, n = 1) => map.set(key, (map.get(key) ?? 0) + n);

function merge(into: StageCounts, from: StageCounts): void {
  into.read += from.read;
  into.filtered += from.filtered;
  for (const [k, n] of from.written) add(into.written, k, n);
  for (const [k, n] of from.events) add(into.events, k, n);
  for (const [k, n] of from.deadLettered) add(into.deadLettered, k, n);
}

/**
 * Counts per transaction attempt and keeps them only once the kit reports it committed
 * (`stream.batch`). A transaction may hold several partitions' records; an attempt that never
 * committed is recognised when `stream.batch.retry` is reported (an abort), or when a partition's
 * records come again from an offset it already counted (a rewind).
 */
export class CommittedCounter {
  readonly total = emptyCounts();
  #pending = new Map<string, { counts: StageCounts; offset: bigint }>();

  /** Called with every record before it is processed or skipped. */
  record(topic: string, partition: number, offset: string): StageCounts {
    const key = `${topic}\u0000${partition}`;
    const at = BigInt(offset);
    const found = this.#pending.get(key);
    // Our offsets again: the attempt did not commit.
    if (found !== undefined && at <= found.offset) this.discard();
    const entry = this.#pending.get(key) ?? { counts: emptyCounts(), offset: at };
    entry.offset = at;
    this.#pending.set(key, entry);
    return entry.counts;
  }

  /** The kit's instrumentation of the app: commits or discards the pending attempt. */
  instrument(event: string): void {
    if (event === 'stream.batch') {
      for (const { counts } of this.#pending.values()) merge(this.total, counts);
      this.#pending.clear();
    } else if (event === 'stream.batch.retry') this.discard();
  }

  discard(): void {
    this.#pending.clear();
  }
}

export interface BoundedTopologyOptions<V> {
  topology: Topology<V>;
  /** The exclusive end offset of each source partition; a partition not listed has no end. */
  endOf: (topic: string, partition: number) => bigint | undefined;
  /** Whether a decoded record is replayed (the trigger filter); every record when absent. */
  accept?: (value: V) => boolean;
  counter: CommittedCounter;
}

/** The topology with its sources bounded and filtered, and its processor counted. */
export function boundedTopology<V>({
  topology,
  endOf,
  accept,
  counter,
}: BoundedTopologyOptions<V>): Topology<Bounded<V>> {
  const sinkTopics = new Map(topology.sinks.map((sink) => [sink.name, sink.topic]));
  return {
    ...topology,
    sources: topology.sources.map((source) => ({
      topic: source.topic,
      async deserialize(message: SourceMessage): Promise<Bounded<V>> {
        const end = endOf(message.topic, message.partition);
        // Past the end: not decoded at all (the rest of a live topic may be long).
        if (end !== undefined && BigInt(message.offset) >= end) return { skip: 'beyond-bound' };
        const value = await source.deserialize(message);
        if (accept !== undefined && !accept(value)) return { skip: 'filtered' };
        return { skip: false, value };
      },
    })),
    processor: {
      name: topology.processor.name,
      create: () => new CountingProcessor(topology.processor.create(), counter, sinkTopics),
    },
    deadLetter: boundedDeadLetter(topology.deadLetter),
  };
}

class CountingProcessor<V> implements Processor<Bounded<V>> {
  #counts = emptyCounts();

  constructor(
    private readonly inner: Processor<V>,
    private readonly counter: CommittedCounter,
    private readonly sinkTopics: ReadonlyMap<string, string>,
  ) {}

  init(context: ProcessorContext): void {
    const self = this;
    const sinkTopics = this.sinkTopics;
    this.inner.init({
      get topic() {
        return context.topic;
      },
      get partition() {
        return context.partition;
      },
      get streamTime() {
        return context.streamTime;
      },
      forward(sink, key, value, options) {
        context.forward(sink, key, value, options);
        add(self.#counts.written, sinkTopics.get(sink) ?? sink);
      },
      getStore: (name) => context.getStore(name),
      schedule: (intervalMs, run) => context.schedule(intervalMs, run),
      instrument(event, labels, value) {
        context.instrument(event, labels, value);
        add(self.#counts.events, event);
        if (event === 'processor.dedupe.routed' && labels?.route === 'dead-lettered')
          add(self.#counts.deadLettered, labels.reason ?? '');
      },
    });
  }

  process(record: InputRecord<Bounded<V>>): void {
    this.#counts = this.counter.record(record.topic, record.partition, record.offset);
    const input = record.value;
    if (input.skip !== false) {
      if (input.skip === 'filtered') this.#counts.filtered++;
      return;
    }
    this.#counts.read++;
    this.inner.process({ ...record, value: input.value });
  }

  close(): void {
    this.inner.close?.();
  }
}

/** The topology's dead-letter hook on the bounded records (a skipped record never fails: nothing runs it). */
function boundedDeadLetter<V>(hook: Topology<V>['deadLetter']): Topology<Bounded<V>>['deadLetter'] {
  if (hook === undefined) return undefined;
  return {
    sink: hook.sink,
    build(record, failure, context) {
      const bounded = record.value;
      if (bounded.skip !== false) throw new TypeError(`a skipped record (${bounded.skip}) failed`);
      return hook.build({ ...record, value: bounded.value }, failure, context);
    },
  };
}
