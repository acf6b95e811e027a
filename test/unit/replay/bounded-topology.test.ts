import { describe, expect, it } from 'vitest';
import type { InputRecord, Processor, ProcessorContext } from '../../../runtime/streams/processor.js';
import type { Topology } from '../../../runtime/streams/topology.js';
import { type Bounded, boundedTopology, CommittedCounter } from '../../../tools/replay/bounded-topology.js';
import { defaultReplayId, REPLAY_ID, replayAppId, replayTopic } from '../../../tools/replay/topics.js';

/** Forwards every value to sink "out"; instruments a duplicate for the value "dup". */
class Echo implements Processor<string> {
  context!: ProcessorContext;
  init(context: ProcessorContext) {
    this.context = context;
  }
  process(record: InputRecord<string>) {
    if (record.value === 'dup') this.context.instrument('processor.dedupe.duplicate');
    else this.context.forward('out', record.key ?? '', record.value);
  }
}

const inner: Topology<string> = {
  name: 'echo',
  sources: [{ topic: 'in', deserialize: async (m) => m.value!.toString('utf8') }],
  processor: { name: 'echo', create: () => new Echo() },
  stores: [],
  sinks: [{ name: 'out', topic: 'out.replay-x', serialize: (v) => Buffer.from(String(v)) }],
};

function harness(accept?: (v: string) => boolean) {
  const counter = new CommittedCounter();
  const topology = boundedTopology({
    topology: inner,
    endOf: (_t, p) => (p === 0 ? 3n : undefined),
    counter,
    ...(accept ? { accept } : {}),
  });
  const forwarded: unknown[] = [];
  const processor = topology.processor.create();
  processor.init({
    topic: 'in',
    partition: 0,
    streamTime: 0,
    forward: (_s, _k, v) => forwarded.push(v),
    getStore: () => {
      throw new Error('no stores');
    },
    schedule: () => undefined,
    instrument: () => undefined,
  });
  const feed = async (partition: number, offset: number, text: string) => {
    const message = {
      topic: 'in',
      partition,
      offset: String(offset),
      key: null,
      value: Buffer.from(text),
      timestamp: 0,
    };
    const value: Bounded<string> = await topology.sources[0]!.deserialize(message);
    processor.process({
      topic: 'in',
      partition,
      offset: String(offset),
      key: 'k',
      value,
      timestamp: 0,
      headers: {},
    });
  };
  return { counter, forwarded, feed };
}

describe('a replay stage’s bounded topology', () => {
  it('skips records at or past the end bound and those the filter refuses, and counts the rest', async () => {
    const { counter, forwarded, feed } = harness((v) => v !== 'other');
    await feed(0, 0, 'a');
    await feed(0, 1, 'other');
    await feed(0, 2, 'dup');
    await feed(0, 3, 'late');
    counter.instrument('stream.batch');
    expect(forwarded).toEqual(['a']);
    expect(counter.total.read).toBe(2);
    expect(counter.total.filtered).toBe(1);
    expect(Object.fromEntries(counter.total.written)).toEqual({ 'out.replay-x': 1 });
    expect(counter.total.events.get('processor.dedupe.duplicate')).toBe(1);
  });

  it('keeps only the counts of attempts that committed', async () => {
    const { counter, feed } = harness();
    await feed(1, 10, 'a');
    counter.instrument('stream.batch.retry');
    await feed(1, 10, 'a');
    await feed(1, 11, 'b');
    // The attempt was lost without a retry event: the partition comes again from an offset it counted.
    await feed(1, 10, 'a');
    await feed(1, 11, 'b');
    counter.instrument('stream.batch');
    await feed(2, 0, 'c');
    expect(counter.total.read).toBe(2);
    // One transaction holds several partitions' records: all count once it commits…
    await feed(1, 12, 'd');
    counter.instrument('stream.batch');
    expect(counter.total.read).toBe(4);
    // …and none when it aborts.
    await feed(2, 1, 'e');
    await feed(1, 13, 'f');
    counter.instrument('stream.batch.retry');
    counter.instrument('stream.batch');
    expect(counter.total.read).toBe(4);
  });
});

describe('replay names', () => {
  it('suffix live names and never share a live app’s group', () => {
    expect(replayTopic('p.entity.user', 'r1')).toBe('p.entity.user.replay-r1');
    expect(replayAppId('p.', 'r1', 'dedupe-router')).toBe('p.hookledger-replay-r1-dedupe-router');
    expect(defaultReplayId(new Date('2026-11-22T16:05:01.123Z'))).toBe('20261122-160501');
    expect(REPLAY_ID.test(defaultReplayId())).toBe(true);
    expect(REPLAY_ID.test('a/b')).toBe(false);
  });
});
