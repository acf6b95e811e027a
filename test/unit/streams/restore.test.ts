// restoreTasks reads every changelog topic at once, one reader each; a failed read stops the others,
// and the run fails only once every reader has stopped (a retry resets the stores no reader may touch).
import { describe, expect, it } from 'vitest';
import type { KafkaSettings } from '../../../runtime/kafka/rdkafka.js';
import type { ReadToEndOptions, ReadToEndResult } from '../../../runtime/kafka/read-to-end.js';
import { restoreTasks } from '../../../runtime/streams/restore.js';
import type { ChangelogRecord } from '../../../runtime/streams/store.js';
import type { StreamTask } from '../../../runtime/streams/stream-task.js';

/** A task with one store per changelog topic, as the tables' tasks have. */
function task(partition: number, topics: string[]) {
  const restored: { store: string; record: ChangelogRecord }[] = [];
  const fake = {
    partition,
    state: 'restoring',
    resetStores: () => restored.splice(0),
    changelogs: () => topics.map((topic) => ({ store: `store-of-${topic}`, topic })),
    restoreRecord: (store: string, record: ChangelogRecord) => restored.push({ store, record }),
  };
  return { task: fake as unknown as StreamTask<unknown>, restored };
}

const settings = {} as KafkaSettings;
const result = (): ReadToEndResult => ({ records: new Map(), ends: new Map(), durationMs: 0 });
const tick = (ms = 5) => new Promise((r) => setTimeout(r, ms));

describe('restoreTasks', () => {
  it('reads the changelog topics side by side, each with one reader for all its partitions', async () => {
    const started: string[] = [];
    let running = 0;
    let most = 0;
    const read = async (o: ReadToEndOptions) => {
      started.push(`${o.topic}:${o.partitions.map((p) => p.partition).join(',')}`);
      running++;
      most = Math.max(most, running);
      await tick(20);
      for (const { partition } of o.partitions) {
        o.onRecord({
          partition,
          offset: 0n,
          key: Buffer.from(`k${partition}`),
          value: Buffer.from('v'),
          timestamp: 7,
          headers: {},
        });
      }
      running--;
      return result();
    };
    const a = task(0, ['a', 'b']);
    const b = task(1, ['a', 'b']);
    const { records } = await restoreTasks(settings, [a.task, b.task], 1_000, read as never).done;
    expect(most).toBe(2);
    expect(started.sort()).toEqual(['a:0,1', 'b:0,1']);
    expect(records).toBe(4);
    expect(a.restored.map((r) => [r.store, r.record.key, r.record.timestamp]).sort()).toEqual([
      ['store-of-a', 'k0', 7],
      ['store-of-b', 'k0', 7],
    ]);
    expect(a.restored[0]!.record.keyBytes).toEqual(Buffer.from('k0'));
  });

  it('stops the other readers when one fails, and fails only once they have all stopped', async () => {
    const failure = new Error('broker gone');
    let otherStopped = false;
    const read = async (o: ReadToEndOptions) => {
      if (o.topic === 'a') {
        await tick();
        throw failure;
      }
      // Reads on until stopped.
      while (!o.signal!.aborted) await tick();
      await tick(30);
      otherStopped = true;
      throw o.signal!.reason;
    };
    const run = restoreTasks(settings, [task(0, ['a', 'b']).task], 1_000, read as never);
    await expect(
      run.done.then(
        () => 'restored',
        (error: unknown) => ({ error, otherStopped }),
      ),
    ).resolves.toEqual({ error: failure, otherStopped: true });
  });
});
