// follow() with a fake admin: the stages' committed offsets move on each poll, as a replay's apps would.
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { TopicAdmin } from '../../../runtime/kafka/admin.js';
import type { StreamApp } from '../../../runtime/streams/stream-runner.js';
import { CommandFailed } from '../../../tools/cli/command.js';
import { CommittedCounter } from '../../../tools/replay/bounded-topology.js';
import { follow, type ReplayProgress, type RunningPart } from '../../../tools/replay/follow.js';

/** Committed offsets and high watermarks per group/topic, changed by the test between polls. */
class FakeAdmin {
  committed = new Map<string, number>();
  highs = new Map<string, number>();
  async committedOffsets(groupId: string, topic: string) {
    const at = this.committed.get(`${groupId}/${topic}`);
    return new Map(at === undefined ? [] : [[0, BigInt(at)]]);
  }
  async watermarks(topic: string) {
    return [{ partition: 0, low: 0, high: this.highs.get(topic) ?? 0 }];
  }
}

const runningApp = { stopped: new Promise<void>(() => undefined) } as unknown as StreamApp;

function parts(): RunningPart[] {
  return [
    {
      stage: 'dedupe-router',
      appId: 'router',
      app: runningApp,
      counter: new CommittedCounter(),
      ranges: new Map([['raw', [{ partition: 0, start: 0n, end: 100n }]]]),
    },
    {
      stage: 'tables',
      appId: 'tables',
      app: runningApp,
      counter: new CommittedCounter(),
      ranges: new Map(),
      growing: { starts: new Map([['user.replay', new Map([[0, 0n]])]]), final: false },
    },
  ];
}

describe("a whole replay's progress", () => {
  it('counts what the tables stage reads while the router still writes, and ends on the final state', async () => {
    const admin = new FakeAdmin();
    const seen: ReplayProgress[] = [];
    // Each poll: the router commits 50 more raw offsets and writes 30 to the stream; the tables keep up.
    const steps = [
      () => {
        admin.committed.set('router/raw', 50);
        admin.highs.set('user.replay', 30);
        admin.committed.set('tables/user.replay', 30);
      },
      () => {
        admin.committed.set('router/raw', 100);
        admin.highs.set('user.replay', 60);
        admin.committed.set('tables/user.replay', 45);
      },
      () => admin.committed.set('tables/user.replay', 60),
    ];
    steps[0]!();
    let step = 1;
    const done = await follow(admin as unknown as TopicAdmin, {
      parts: parts(),
      started: Date.now(),
      pollMs: 1,
      onProgress: (p) => {
        seen.push(p);
        // After both parts of a round: the apps move on before the next poll.
        if (p.stage === 'tables') steps[step++]?.();
      },
      signal: undefined,
      log: pino({ level: 'silent' }),
    });
    expect(done).toBe(true);
    const tables = seen.filter((p) => p.stage === 'tables').map((p) => [p.done, p.total]);
    // Never 0/0 while the tables read: the total grows with the router's output.
    expect(tables).toEqual([
      [30n, 30n],
      [45n, 60n],
      [60n, 60n],
    ]);
    expect(seen.filter((p) => p.stage === 'dedupe-router').at(-1)).toMatchObject({ done: 100n, total: 100n });
  });

  it('fails with one line naming the cause when a stage stops by itself', async () => {
    const crashed = {
      stopped: Promise.resolve(),
      failure: () => new Error('Producer fenced: another instance took over\n    at somewhere'),
    } as unknown as StreamApp;
    const [router, tables] = parts();
    const run = follow(new FakeAdmin() as unknown as TopicAdmin, {
      parts: [{ ...router!, app: crashed }, tables!],
      started: Date.now(),
      pollMs: 10_000,
      onProgress: undefined,
      signal: undefined,
      log: pino({ level: 'silent' }),
    });
    await expect(run).rejects.toThrow(CommandFailed);
    await expect(run).rejects.toThrow(
      /^the replay's dedupe-router stage stopped: Producer fenced: another instance took over$/,
    );
  });

  it('stops at once, unfinished, when interrupted', async () => {
    const controller = new AbortController();
    controller.abort();
    const done = await follow(new FakeAdmin() as unknown as TopicAdmin, {
      parts: parts(),
      started: Date.now(),
      pollMs: 10_000,
      onProgress: undefined,
      signal: controller.signal,
      log: pino({ level: 'silent' }),
    });
    expect(done).toBe(false);
  });
});
