// Runs a topology in memory, one input record at a time, for unit tests (Kafka Streams'
// TopologyTestDriver, small): no Kafka, no serialization; each record commits on its own.
import type {
  ForwardOptions,
  InputRecord,
  Processor,
  ProcessorContext,
  Punctuator,
} from '../../runtime/streams/processor.js';
import type { ChangelogRecord, StateStore } from '../../runtime/streams/store.js';
import type { Topology } from '../../runtime/streams/topology.js';

export interface DriverOutput {
  sink: string;
  topic: string;
  key: string;
  value: unknown;
  /** The partition the kit would write to, when it is decided by the kit (co-partitioned, explicit). */
  partition: number | undefined;
  timestamp: number;
}

export interface DriverEvent {
  event: string;
  labels: Readonly<Record<string, string>>;
  value: number | undefined;
}

interface Task<V> {
  processor: Processor<V>;
  stores: Map<string, StateStore>;
  streamTime: number;
  punctuations: { intervalMs: number; last: number; run: Punctuator }[];
}

export class TopologyTestDriver<V> {
  readonly outputs: DriverOutput[] = [];
  readonly events: DriverEvent[] = [];
  /** Every changelog record written, per changelog topic and partition (`topic/partition`). */
  readonly changelogs = new Map<string, ChangelogRecord[]>();
  #tasks = new Map<string, Task<V>>();
  #offset = 0;

  constructor(
    readonly topology: Topology<V>,
    /** Changelogs to restore from, as another driver wrote them (a new owner of the partitions). */
    restoreFrom?: ReadonlyMap<string, readonly ChangelogRecord[]>,
  ) {
    if (restoreFrom) for (const [key, records] of restoreFrom) this.changelogs.set(key, [...records]);
  }

  #task(topic: string, partition: number): Task<V> {
    const id = `${topic}/${partition}`;
    const existing = this.#tasks.get(id);
    if (existing) return existing;
    const stores = new Map(this.topology.stores.map((spec) => [spec.name, spec.create(partition)]));
    const task: Task<V> = {
      processor: this.topology.processor.create(),
      stores,
      streamTime: 0,
      punctuations: [],
    };
    // Restore first, as the kit does before the first record.
    for (const spec of this.topology.stores) {
      const store = stores.get(spec.name)!;
      for (const record of this.changelogs.get(`${spec.changelogTopic(topic)}/${partition}`) ?? []) {
        store.restore(record);
        task.streamTime = Math.max(task.streamTime, store.eventTimeOf?.(record) ?? record.timestamp);
      }
      store.restored?.(task.streamTime);
    }
    this.#tasks.set(id, task);
    task.processor.init(this.#context(task, topic, partition));
    return task;
  }

  #context(task: Task<V>, topic: string, partition: number): ProcessorContext {
    const sinks = new Map(this.topology.sinks.map((s) => [s.name, s]));
    const driver = this;
    return {
      topic,
      partition,
      get streamTime() {
        return task.streamTime;
      },
      forward(name: string, key: string, value: unknown, options: ForwardOptions = {}) {
        const sink = sinks.get(name);
        if (sink === undefined) throw new TypeError(`no sink named ${name}`);
        driver.outputs.push({
          sink: name,
          topic: sink.topic,
          key,
          value,
          partition: options.partition ?? (sink.copartitioned ? partition : undefined),
          timestamp: options.timestamp ?? task.streamTime,
        });
      },
      getStore<S extends StateStore>(name: string): S {
        return task.stores.get(name) as S;
      },
      schedule(intervalMs: number, run: Punctuator) {
        task.punctuations.push({ intervalMs, last: task.streamTime, run });
      },
      instrument(event, labels = {}, value) {
        driver.events.push({ event, labels, value });
      },
    };
  }

  /** Processes one record and commits it (stores and changelog), then runs due punctuations. */
  pipe(
    topic: string,
    partition: number,
    record: { key: string | null; value: V; timestamp: number; headers?: Record<string, string> },
  ): void {
    const task = this.#task(topic, partition);
    task.streamTime = Math.max(task.streamTime, record.timestamp);
    const input: InputRecord<V> = {
      topic,
      partition,
      offset: String(this.#offset++),
      key: record.key,
      value: record.value,
      timestamp: record.timestamp,
      headers: record.headers ?? {},
    };
    task.processor.process(input);
    this.#commit(task, topic, partition);
    for (const p of task.punctuations) {
      if (task.streamTime - p.last >= p.intervalMs) {
        p.last = task.streamTime;
        p.run(task.streamTime);
      }
    }
  }

  #commit(task: Task<V>, topic: string, partition: number): void {
    for (const spec of this.topology.stores) {
      const store = task.stores.get(spec.name)!;
      const key = `${spec.changelogTopic(topic)}/${partition}`;
      const log = this.changelogs.get(key) ?? [];
      log.push(...store.takeChangelog());
      this.changelogs.set(key, log);
      store.commit();
    }
  }

  /** Outputs of one sink (by sink name). */
  sink(name: string): DriverOutput[] {
    return this.outputs.filter((o) => o.sink === name);
  }

  /** The store of one partition's task, to look inside. */
  store<S extends StateStore>(topic: string, partition: number, name: string): S {
    return this.#task(topic, partition).stores.get(name) as S;
  }
}
