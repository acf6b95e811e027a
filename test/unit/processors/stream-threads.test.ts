// The process side of `process --threads N`: each thread's lifecycle (starting → running → closing →
// ended), readiness over threads, metrics from every running thread, and what ends the process.
import { describe, expect, it } from 'vitest';
import {
  StreamThreadStartError,
  StreamThreads,
  THREAD_SILENT_MS,
} from '../../../processors/stream-threads.js';
import type { FromChild } from '../../../runtime/child-processes.js';
import { FakeChild as FakeThread } from '../runtime/fake-child.js';

function threads(count: number, stages = ['dedupe-router', 'tables']) {
  const fakes: FakeThread[] = [];
  const supervisor = new StreamThreads(count, stages, () => {
    const fake = new FakeThread();
    fakes.push(fake);
    return fake;
  });
  return { supervisor, fakes };
}

const settled = async <T>(promise: Promise<T>) => {
  let state: 'pending' | 'resolved' | 'rejected' = 'pending';
  promise.then(
    () => {
      state = 'resolved';
    },
    () => {
      state = 'rejected';
    },
  );
  await new Promise((resolve) => setImmediate(resolve));
  return state;
};

describe('stream threads', () => {
  it('have started once every thread runs its stages', async () => {
    const { supervisor, fakes } = threads(2);
    fakes[0]!.say({ type: 'running' });
    expect(await settled(supervisor.started())).toBe('pending');
    fakes[1]!.say({ type: 'running' });
    expect(await settled(supervisor.started())).toBe('resolved');
  });

  it('fail to start with the first thread’s failure, its registry status and whether Kafka refused', async () => {
    const { supervisor, fakes } = threads(2);
    fakes[0]!.say({ type: 'running' });
    fakes[1]!.say({
      type: 'start-failed',
      error: { message: 'subject not found', status: 404, cluster: false },
    });
    const error = await supervisor.started().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StreamThreadStartError);
    expect(error).toMatchObject({
      message: 'stream thread 1: subject not found',
      status: 404,
      cluster: false,
    });
  });

  it('fail to start when a thread exits before it runs', async () => {
    const { supervisor, fakes } = threads(2);
    fakes[1]!.exit(1);
    await expect(supervisor.started()).rejects.toThrow('stream thread 1: exited with code 1');
  });

  it('are ready for a stage only when every thread is, naming the thread that is not', () => {
    const { supervisor, fakes } = threads(2);
    expect(supervisor.readiness('tables')).toEqual({
      ready: false,
      reasons: ['thread 0: starting', 'thread 1: starting'],
    });
    fakes[0]!.say({
      type: 'readiness',
      readiness: { tables: { ready: true }, 'dedupe-router': { ready: true } },
    });
    fakes[1]!.say({
      type: 'readiness',
      readiness: {
        tables: { ready: false, reasons: ['restoring tables-2'] },
        'dedupe-router': { ready: true },
      },
    });
    expect(supervisor.readiness('dedupe-router')).toEqual({ ready: true });
    expect(supervisor.readiness('tables')).toEqual({
      ready: false,
      reasons: ['thread 1: restoring tables-2'],
    });
  });

  it('show the threads’ bytes on disk summed, and each standby copy’s lag (the largest over threads)', () => {
    const { supervisor, fakes } = threads(2);
    fakes[0]!.say({
      type: 'readiness',
      readiness: { 'dedupe-router': { ready: true, stateDiskBytes: 4_096, standbyLag: { 'c[1]': 3 } } },
    });
    fakes[1]!.say({
      type: 'readiness',
      readiness: {
        'dedupe-router': { ready: true, stateDiskBytes: 8_192, standbyLag: { 'c[0]': 0, 'c[1]': 7 } },
      },
    });
    expect(supervisor.readiness('dedupe-router')).toEqual({
      ready: true,
      stateDiskBytes: 12_288,
      standbyLag: { 'c[0]': 0, 'c[1]': 7 },
    });
  });

  it('end the process when a running thread’s stage stops by itself, saying which thread and why', async () => {
    const { supervisor, fakes } = threads(2);
    for (const fake of fakes) fake.say({ type: 'running' });
    fakes[1]!.say({ type: 'stopped', stage: 'tables', failure: 'fenced' });
    expect(await supervisor.stopped).toEqual({ stage: 'tables', failure: 'stream thread 1: fenced' });
  });

  it('end the process when a running thread exits unasked', async () => {
    const { supervisor, fakes } = threads(2);
    for (const fake of fakes) fake.say({ type: 'running' });
    fakes[0]!.exit(7);
    expect(await supervisor.stopped).toEqual({
      stage: 'dedupe-router',
      failure: 'stream thread 0 exited with code 7',
    });
  });

  it('gather metrics from every running thread, and do not wait for one that exits meanwhile', async () => {
    const { supervisor, fakes } = threads(2);
    for (const fake of fakes) fake.say({ type: 'running' });
    const series = [
      { name: 'a', help: 'a', type: 'counter', aggregator: 'sum', values: [{ value: 1, labels: {} }] },
    ];
    fakes[0]!.metricsAnswer = { type: 'metrics', id: 0, metrics: series } as unknown as FromChild;
    const gathered = supervisor.metrics();
    expect(await settled(gathered)).toBe('pending');
    fakes[1]!.exit(1);
    expect(await gathered).toEqual([series, []]);
    expect(fakes[1]!.received).toEqual([{ type: 'metrics', id: 1 }]);
  });

  it('close every thread, terminate one that does not end in time, and do not take that for a stop', async () => {
    const { supervisor, fakes } = threads(2);
    for (const fake of fakes) fake.say({ type: 'running' });
    fakes[1]!.closes = false;
    await supervisor.close(20);
    expect(fakes.map((f) => f.received.at(-1))).toEqual([{ type: 'close' }, { type: 'close' }]);
    expect(fakes.map((f) => f.terminated)).toEqual([false, true]);
    expect(await settled(supervisor.stopped)).toBe('pending');
  });

  it('take a running thread silent past the limit for a blocked one: not ready, and its metrics not waited for', async () => {
    let now = 0;
    const fakes: FakeThread[] = [];
    const supervisor = new StreamThreads(
      2,
      ['tables'],
      () => {
        const fake = new FakeThread();
        fakes.push(fake);
        return fake;
      },
      { now: () => now, metricsTimeoutMs: 50 },
    );
    const ready = { type: 'readiness', readiness: { tables: { ready: true } } } as const;
    for (const fake of fakes) {
      fake.say({ type: 'running' });
      fake.say(ready);
    }
    expect(supervisor.readiness('tables')).toEqual({ ready: true });
    // Thread 0 repeats its readiness every second; thread 1 stops saying anything.
    now = THREAD_SILENT_MS + 1_000;
    fakes[0]!.say(ready);
    expect(supervisor.readiness('tables')).toEqual({
      ready: false,
      reasons: ['thread 1: silent for 6 s (its event loop is blocked)'],
    });
    fakes[1]!.say(ready);
    expect(supervisor.readiness('tables')).toEqual({ ready: true });
    // A scrape gets the threads that answer: thread 1 never does.
    fakes[0]!.metricsAnswer = { type: 'metrics', id: 0, metrics: [] };
    expect(await supervisor.metrics()).toEqual([[]]);
  });
});
