// A stream app with a standby replica, over a fake Kafka and a fake standby consumer: it follows what its
// group did not give it and what it gives back, and releases a gained partition before its task opens it.
import { afterEach, describe, expect, it } from 'vitest';
import type { StreamApp } from '../../../runtime/streams/stream-runner.js';
import type { Topology } from '../../../runtime/streams/topology.js';
import { useTempStateDirs } from '../../helpers/temp-state-dir.js';
import { CHANGELOG, FakeChangelog, p, topology } from './fake-standby-consumer.js';
import { FakeKafka } from './fake-stream-clients.js';
import { closeApps, start, until } from './runner-fixtures.js';

const dirs = useTempStateDirs();
// After useTempStateDirs: hooks run in reverse, so the apps close before their directories go.
afterEach(closeApps);

describe('a stream app with a standby replica', () => {
  it('follows what its group did not give it, what it gives back, and stops with it', async () => {
    const changelog = new FakeChangelog(2);
    changelog.write(0, 1);
    changelog.write(1, 2);
    const kafka = new FakeKafka();
    const app = await start(kafka, {
      stateDir: dirs.root(),
      standbyReplicas: 1,
      standbyConsumer: changelog.create,
    });
    await new Promise((r) => setTimeout(r, 20));
    expect(changelog.consumers).toHaveLength(0);
    kafka.consumer.rebalance('assign', [p(0)]);
    await until(() => app.standbyLag?.()?.[0]?.behind === 0, 'following partition 1');
    expect(app.standbyLag?.()).toEqual([{ topic: CHANGELOG, partition: 1, behind: 0 }]);
    kafka.consumer.rebalance('revoke', [p(0)]);
    await until(() => app.standbyLag?.()?.length === 2, 'following both');
    await app.close();
    expect(changelog.last.closed).toBe(true);
  });

  it('releases a gained partition before its task opens the directory, which restores from the standby’s checkpoint', async () => {
    const changelog = new FakeChangelog(2);
    changelog.write(1, 1, 2);
    const kafka = new FakeKafka();
    let app: StreamApp | undefined;
    /** Per store made for partition 1: whether the standby still followed it at that moment. */
    const followedWhenMade: boolean[] = [];
    const spec = topology.stores[0]!;
    const watched: Topology<number> = {
      ...topology,
      stores: [
        {
          ...spec,
          create: (partition, dir) => {
            if (partition === 1)
              followedWhenMade.push(app?.standbyLag?.()?.some((l) => l.partition === 1) ?? false);
            return spec.create(partition, dir);
          },
        },
      ],
    };
    const restoredFrom: (bigint | undefined)[] = [];
    app = await start(kafka, {
      topology: watched,
      stateDir: dirs.root(),
      standbyReplicas: 1,
      standbyConsumer: changelog.create,
      restore: (tasks) => {
        for (const task of tasks)
          restoredFrom.push(task.restoreFrom(CHANGELOG, changelog.bounds(task.partition)));
        return { done: Promise.resolve({ durationMs: 0, records: 0 }), cancel: () => undefined };
      },
    });
    kafka.consumer.rebalance('assign', [p(0)]);
    await until(() => app.standbyLag?.()?.[0]?.behind === 0, 'partition 1 followed to its end');
    kafka.consumer.rebalance('assign', [p(1)]);
    await until(() => restoredFrom.length === 2, 'both partitions restored');
    // The active task's stores were made after the release, and its restore starts where the copy ended.
    expect(followedWhenMade.at(-1)).toBe(false);
    expect(restoredFrom).toEqual([undefined, 2n]);
    expect(app.standbyLag?.()).toEqual([]);
  });

  it('has no standby without the setting', async () => {
    const app = await start(new FakeKafka(), { stateDir: dirs.root() });
    expect(app.standbyLag?.()).toBeUndefined();
  });
});
