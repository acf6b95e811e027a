import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { InputRecord, Processor, ProcessorContext } from '../../../runtime/streams/processor.js';
import { ChangelogKeyValueStore, MapBacking } from '../../../runtime/streams/store.js';
import { StreamTask } from '../../../runtime/streams/stream-task.js';
import type { Topology } from '../../../runtime/streams/topology.js';

const codec = { encode: (v: number) => Buffer.from(String(v)), decode: (b: Buffer) => Number(b.toString()) };

/** Counts values per key; throws on the key "boom". */
class Counting implements Processor<number> {
  #context!: ProcessorContext;
  init(context: ProcessorContext) {
    this.#context = context;
  }
  process(record: InputRecord<number>) {
    const store = this.#context.getStore<ChangelogKeyValueStore<number>>('counts');
    store.put(record.key!, (store.get(record.key!) ?? 0) + record.value, record.timestamp);
    this.#context.instrument('counted', {});
    if (record.key === 'boom') throw new Error('boom');
    this.#context.forward('out', record.key!, record.value);
  }
}

const topology: Topology<number> = {
  name: 't',
  sources: [{ topic: 'in', deserialize: async () => 0 }],
  processor: { name: 'p', create: () => new Counting() },
  stores: [
    {
      name: 'counts',
      changelogTopic: () => 'in-changelog',
      create: () => new ChangelogKeyValueStore<number>('counts', new MapBacking<number>(), codec),
    },
  ],
  sinks: [{ name: 'out', topic: 'out', serialize: () => Buffer.alloc(0) }],
};

function fakePort() {
  const calls: string[] = [];
  return {
    calls,
    pause: (t: string, p: number) => calls.push(`pause ${t}[${p}]`),
    resume: (t: string, p: number) => calls.push(`resume ${t}[${p}]`),
  };
}

const record = (key: string, value: number, offset: number): InputRecord<number> => ({
  topic: 'in',
  partition: 0,
  offset: String(offset),
  key,
  value,
  timestamp: 1_000 + offset,
  headers: {},
});

function runningTask() {
  const port = fakePort();
  const task = new StreamTask<number>({
    topology,
    source: topology.sources[0]!,
    partition: 0,
    port,
    logger: pino({ level: 'silent' }),
  });
  task.machine.transitionTo('restoring');
  task.restoreRecord('counts', { key: 'a', value: Buffer.from('10'), timestamp: 5 });
  task.finishRestore();
  task.machine.transitionTo('running');
  return { task, port };
}

describe('a stream task', () => {
  it('pauses on assignment and resumes only once its state is restored', () => {
    const { port } = runningTask();
    expect(port.calls).toEqual(['pause in[0]', 'resume in[0]']);
  });

  it('undoes a record whose processor threw, keeping the transaction’s other records', () => {
    const { task } = runningTask();
    const ok = task.process(record('a', 1, 0), 0);
    expect('outputs' in ok && ok.outputs).toHaveLength(1);
    task.keepRecord();
    const failed = task.process(record('boom', 5, 1), 1);
    expect('failure' in failed && failed.failure.reason).toBe('processor-error');
    task.undoRecord();
    expect(task.takeChangelog().map((c) => c.record.key)).toEqual(['a']);
    const events: string[] = [];
    task.committed((event) => events.push(event));
    expect(events).toEqual(['counted']);
    expect(task.position.committed).toBe(2);
  });

  it('forgets an aborted transaction and says where to fetch again', () => {
    const { task } = runningTask();
    task.position.handedOver(7);
    task.position.handedOver(8);
    task.process(record('a', 1, 7), 7);
    task.keepRecord();
    task.process(record('a', 1, 8), 8);
    task.keepRecord();
    const streamTimeBefore = 5;
    expect(task.aborted()).toBe(7);
    expect(task.dirty).toBe(false);
    expect(task.streamTime).toBe(streamTimeBefore);
    // The retried records decide from the committed state.
    task.process(record('a', 1, 7), 7);
    task.keepRecord();
    expect(task.takeChangelog()[0]!.record.value).toEqual(Buffer.from('11'));
  });

  it('follows the consumer past transaction markers, never behind what it processed', () => {
    const { task } = runningTask();
    task.process(record('a', 1, 3), 3);
    task.keepRecord();
    task.position.advanceTo(2);
    expect(task.position.toCommit).toBe(4);
    task.position.advanceTo(6);
    expect(task.position.toCommit).toBe(6);
  });

  it('closes from any owned state, cancelling its restore, and never reopens', () => {
    const port = fakePort();
    const task = new StreamTask<number>({
      topology,
      source: topology.sources[0]!,
      partition: 1,
      port,
      logger: pino({ level: 'silent' }),
    });
    task.machine.transitionTo('restoring');
    const abort = new AbortController();
    task.restore.abort = abort;
    task.machine.transitionTo('revoked');
    task.close();
    expect(abort.signal.aborted).toBe(true);
    expect(task.state).toBe('closed');
    expect(() => task.machine.transitionTo('running')).toThrow();
    expect(port.calls).toEqual(['pause in[1]']);
  });

  it('does not let one record stamped by a fast clock move stream time into the future', () => {
    const now = Date.parse('2026-11-23T12:00:00Z');
    const task = new StreamTask<number>({
      topology,
      source: topology.sources[0]!,
      partition: 0,
      port: fakePort(),
      logger: pino({ level: 'silent' }),
      now: () => now,
    });
    task.machine.transitionTo('restoring');
    task.restoreRecord('counts', { key: 'a', value: Buffer.from('10'), timestamp: now + 86_400_000 });
    expect(task.streamTime).toBe(now + 60_000);
    task.finishRestore();
    task.machine.transitionTo('running');
    task.process({ ...record('a', 1, 0), timestamp: now - 1_000 }, 0);
    task.keepRecord();
    task.process({ ...record('a', 1, 1), timestamp: now + 3 * 86_400_000 }, 1);
    task.keepRecord();
    expect(task.streamTime).toBe(now + 60_000);
    const events: [string, number | undefined][] = [];
    task.committed((event, _labels, value) => events.push([event, value]));
    expect(events).toContainEqual(['stream.record.ahead-of-clock', 3 * 86_400]);
  });
});
