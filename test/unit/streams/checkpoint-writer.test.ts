import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { CheckpointWriter } from '../../../runtime/streams/checkpoint-writer.js';
import { StateStoreFailedError } from '../../../runtime/streams/errors.js';
import type { StreamTask } from '../../../runtime/streams/stream-task.js';

/** A task on disk as the writer sees it: its changelogs, stream time, and the checkpoints it was given. */
function task(partition = 0, onDisk = true) {
  const taken: { offsets: Map<string, bigint>; streamTime: number }[] = [];
  const fake = {
    partition,
    stateDir: onDisk ? {} : undefined,
    committedStreamTime: 1_000 + partition,
    changelogs: () => [{ store: 's', topic: 'changelog' }],
    checkpoint: (offsets: Map<string, bigint>, streamTime: number) => {
      taken.push({ offsets, streamTime });
    },
  };
  return { task: fake as unknown as StreamTask<unknown>, taken };
}

function consumer(answer: (topic: string, partition: number) => Promise<number>) {
  const asked: string[] = [];
  return {
    asked,
    queryHighWatermark: (topic: string, partition: number) => {
      asked.push(`${topic}[${partition}]`);
      return answer(topic, partition);
    },
  };
}

/** Brokers that do not answer until `back()`, then answer 7 for every changelog end. */
function goneThenBack() {
  let gone = true;
  return {
    consumer: consumer(async () => {
      if (gone) throw new Error('broker gone');
      return 7;
    }),
    back: () => {
      gone = false;
    },
  };
}

const log = pino({ level: 'silent' });

describe('checkpoints after commits', () => {
  it('records each changelog end the brokers answer, with the stream time as of the commit', async () => {
    const c = consumer(async (_topic, partition) => 100 + partition);
    const writer = new CheckpointWriter<unknown>(c, log, 1_000);
    const a = task(0);
    const b = task(1);
    writer.committed([a.task, b.task], 10_000);
    await writer.settled();
    expect(a.taken).toEqual([{ offsets: new Map([['changelog', 100n]]), streamTime: 1_000 }]);
    expect(b.taken).toEqual([{ offsets: new Map([['changelog', 101n]]), streamTime: 1_001 }]);
  });

  it('asks at most once per interval, and then for every task that committed since', async () => {
    const c = consumer(async () => 5);
    const writer = new CheckpointWriter<unknown>(c, log, 1_000);
    const a = task(0);
    const b = task(1);
    writer.committed([a.task], 10_000);
    await writer.settled();
    writer.committed([b.task], 10_500);
    await writer.settled();
    expect(c.asked).toEqual(['changelog[0]']);
    writer.committed([], 11_000);
    await writer.settled();
    expect(c.asked).toEqual(['changelog[0]', 'changelog[1]']);
  });

  it('holds the next commit’s changelog writes until the answer is in', async () => {
    let answer!: (end: number) => void;
    const c = consumer(() => new Promise<number>((resolve) => (answer = resolve)));
    const writer = new CheckpointWriter<unknown>(c, log, 1_000);
    const a = task();
    writer.committed([a.task], 10_000);
    let settled = false;
    const waiting = writer.settled().then(() => (settled = true));
    await new Promise((r) => setTimeout(r, 10));
    expect(settled).toBe(false);
    answer(42);
    await waiting;
    expect(a.taken[0]?.offsets.get('changelog')).toBe(42n);
  });

  it('takes no checkpoint when the brokers do not answer, and tries again after the next commit', async () => {
    const brokers = goneThenBack();
    const writer = new CheckpointWriter<unknown>(brokers.consumer, log, 1_000);
    const a = task();
    writer.committed([a.task], 10_000);
    await writer.settled();
    expect(a.taken).toEqual([]);
    brokers.back();
    writer.committed([a.task], 11_000);
    await writer.settled();
    expect(a.taken).toHaveLength(1);
  });

  it('keeps every task whose answer did not come due, for the checkpoint after any next commit', async () => {
    const brokers = goneThenBack();
    const writer = new CheckpointWriter<unknown>(brokers.consumer, log, 1_000);
    const a = task(0);
    const b = task(1);
    writer.committed([a.task, b.task], 10_000);
    await writer.settled();
    expect([a.taken, b.taken]).toEqual([[], []]);
    brokers.back();
    // Another task commits; a and b commit nothing more, and still get their checkpoints.
    writer.committed([task(2).task], 11_000);
    await writer.settled();
    expect([a.taken.length, b.taken.length]).toEqual([1, 1]);
  });

  it('leaves tasks whose state is in memory alone', async () => {
    const c = consumer(async () => 1);
    const writer = new CheckpointWriter<unknown>(c, log, 1_000);
    writer.committed([task(0, false).task], 10_000);
    await writer.settled();
    expect(c.asked).toEqual([]);
  });

  it('stops the next commit when a store cannot write its committed state with the checkpoint', async () => {
    const writer = new CheckpointWriter<unknown>(
      consumer(async () => 5),
      log,
      1_000,
    );
    const full = task(3);
    (full.task as unknown as { checkpoint: () => void }).checkpoint = () => {
      throw new Error('MDB_MAP_FULL: Environment mapsize limit reached');
    };
    writer.committed([full.task], 10_000);
    await expect(writer.settled()).rejects.toThrow(StateStoreFailedError);
    await expect(writer.settled()).rejects.toThrow(/could not write its committed state.*MDB_MAP_FULL/);
  });
});
