// A changelog as the standby follower's fake consumer reads it (offsets with commit markers, never handed
// over), and the runner fixtures' topology with its store on disk: what the standby unit tests share.
import type { ChangelogBounds } from '../../../runtime/streams/checkpoint.js';
import { LmdbBacking } from '../../../runtime/streams/lmdb-backing.js';
import type { StandbyConsumer } from '../../../runtime/streams/standby-follower.js';
import { ChangelogKeyValueStore, MapBacking } from '../../../runtime/streams/store.js';
import type { ConsumedMessage, TopicPartition } from '../../../runtime/streams/stream-clients.js';
import type { Topology } from '../../../runtime/streams/topology.js';
import { codec, Forwarding } from './runner-fixtures.js';

export const CHANGELOG = 'in-changelog';

export const p = (partition: number) => ({ topic: 'in', partition });

/** The runner fixtures' topology, its store on disk when given a directory. */
export const topology: Topology<number> = {
  name: 't',
  sources: [{ topic: 'in', deserialize: async ({ value }) => Number(value?.toString()) }],
  processor: { name: 'forward', create: () => new Forwarding() },
  stores: [
    {
      name: 'last',
      changelogTopic: () => CHANGELOG,
      create: (_partition, dir) =>
        new ChangelogKeyValueStore<number>(
          'last',
          dir === undefined
            ? new MapBacking<number>()
            : new LmdbBacking<number>(dir, 'last', codec, () => undefined),
          codec,
        ),
    },
  ],
  sinks: [{ name: 'out', topic: 'out', serialize: (v) => Buffer.from(String(v)) }],
};

/** A changelog's records per partition, as the brokers hold them; `marker` offsets are never handed over. */
export class FakeChangelog {
  readonly records = new Map<number, ({ key: string; value: number; timestamp: number } | 'marker')[]>();
  /** Consumers made, in order; every call any of them got. */
  readonly consumers: FakeStandbyConsumer[] = [];
  /** Called with each batch just before a consumer hands it over. */
  beforeHandOver: ((batch: ConsumedMessage[]) => void) | undefined;
  /** The next consume of any consumer fails with this (once). */
  failNextConsume: Error | undefined;

  constructor(partitions: number) {
    for (let p = 0; p < partitions; p++) this.records.set(p, []);
  }

  write(partition: number, ...values: number[]): void {
    for (const value of values)
      this.records.get(partition)!.push({ key: `k${value % 5}`, value, timestamp: 1_000 * value });
    this.records.get(partition)!.push('marker'); // the transaction's commit marker
  }

  bounds(partition: number): ChangelogBounds {
    return { low: 0n, high: BigInt(this.records.get(partition)!.length) };
  }

  create = async (): Promise<StandbyConsumer> => {
    const consumer = new FakeStandbyConsumer(this);
    this.consumers.push(consumer);
    return consumer;
  };

  get last(): FakeStandbyConsumer {
    return this.consumers.at(-1)!;
  }
}

export class FakeStandbyConsumer implements StandbyConsumer {
  readonly calls: string[] = [];
  /** Where each assigned partition reads next. */
  readonly positions = new Map<number, number>();
  closed = false;

  constructor(private readonly changelog: FakeChangelog) {}

  async bounds(topic: string) {
    this.calls.push(`bounds ${topic}`);
    return [...this.changelog.records.keys()].map((partition) => ({
      partition,
      ...this.changelog.bounds(partition),
    }));
  }

  assign(assignment: readonly (TopicPartition & { offset: number })[]): void {
    this.calls.push(`assign ${assignment.map((a) => `${a.partition}@${a.offset}`).join(',')}`);
    this.positions.clear();
    for (const { partition, offset } of assignment) this.positions.set(partition, offset);
  }

  async consume(max: number): Promise<ConsumedMessage[]> {
    await new Promise((r) => setTimeout(r, 2));
    const failure = this.changelog.failNextConsume;
    if (failure !== undefined) {
      this.changelog.failNextConsume = undefined;
      throw failure;
    }
    const out: ConsumedMessage[] = [];
    for (const [partition, from] of this.positions) {
      const records = this.changelog.records.get(partition)!;
      let at = from;
      while (at < records.length && out.length < max) {
        const record = records[at]!;
        if (record !== 'marker')
          out.push({
            topic: CHANGELOG,
            partition,
            offset: at,
            key: Buffer.from(record.key),
            value: codec.encode(record.value),
            timestamp: record.timestamp,
          });
        at++;
      }
      this.positions.set(partition, at);
    }
    this.changelog.beforeHandOver?.(out);
    return out;
  }

  position(partitions: readonly TopicPartition[]) {
    return partitions.map((p) => ({ ...p, offset: this.positions.get(p.partition) }));
  }

  highWatermark(_topic: string, partition: number): number | undefined {
    return this.changelog.records.get(partition)!.length;
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}
