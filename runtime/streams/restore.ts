// Restores newly assigned tasks' stores from their changelog partitions, read_committed to the end
// (runtime/kafka/read-to-end.ts): one group-less reader per changelog topic for all the tasks at once,
// every topic's reader at the same time.
import type { KafkaSettings } from '../kafka/rdkafka.js';
import { readToEnd } from '../kafka/read-to-end.js';
import { RestoredRecord } from './store.js';
import type { StreamTask } from './stream-task.js';

/** Records a restore's reader takes per consume call (read-to-end.ts batchSize). */
const RESTORE_BATCH = 10_000;

export interface RestoreRun {
  /** Restored (or given up: closed tasks are simply left out). */
  done: Promise<{ durationMs: number; records: number }>;
  /** Cancels the read (every task of the run was revoked or closed). */
  cancel(): void;
}

export function restoreTasks<V>(
  settings: KafkaSettings,
  tasks: readonly StreamTask<V>[],
  stallTimeoutMs = 60_000,
  /** How a changelog topic is read (a test gives its own). */
  read: typeof readToEnd = readToEnd,
): RestoreRun {
  const abort = new AbortController();
  const run = async () => {
    const started = Date.now();
    let total = 0;
    const byChangelog = new Map<string, { store: string; tasks: Map<number, StreamTask<V>> }[]>();
    // A directory still writing an earlier owner's last checkpoint (asynchronously) finishes first: the
    // restore's writes are synchronous, and must not race it.
    await Promise.all(tasks.map((task) => task.stateDir?.settled()));
    for (const task of tasks) {
      task.resetStores();
      for (const { store, topic } of task.changelogs()) {
        const groups = byChangelog.get(topic) ?? [];
        byChangelog.set(topic, groups);
        let group = groups.find((g) => g.store === store && !g.tasks.has(task.partition));
        if (group === undefined) {
          group = { store, tasks: new Map() };
          groups.push(group);
        }
        group.tasks.set(task.partition, task);
      }
    }
    // One reader per changelog topic, all topics at once (the tables' five changelogs connect and
    // read side by side); a store twice on one partition reads that topic again after.
    const reads = [...byChangelog].map(async ([topic, groups]) => {
      for (const { store, tasks: byPartition } of groups) {
        const { ends } = await read({
          settings,
          topic,
          partitions: [...byPartition.keys()].map((partition) => ({ partition })),
          // A store on disk restores from its checkpoint (or is wiped, then restored in full).
          startAt: (partition, bounds) => {
            const task = byPartition.get(partition);
            if (task === undefined || task.state !== 'restoring') return undefined;
            const from = task.restoreFrom(topic, bounds);
            task.restore.total = (task.restore.total ?? 0) + Number(bounds.high - (from ?? bounds.low));
            return from;
          },
          signal: abort.signal,
          stallTimeoutMs,
          batchSize: RESTORE_BATCH,
          component: 'restore',
          onRecord: ({ partition, key, value, timestamp }) => {
            const task = byPartition.get(partition);
            // A task closed meanwhile (revoked during its restore) takes nothing more.
            if (task === undefined || task.state !== 'restoring') return;
            // The key stays bytes unless the store asks for its text (the dedupe store hashes the bytes).
            task.restoreRecord(store, new RestoredRecord(key, value, timestamp));
            total++;
          },
        });
        for (const [partition, end] of ends) byPartition.get(partition)?.restoredTo(topic, end);
      }
    });
    // A failed read stops the others; every reader has stopped before the run fails (a retry resets
    // the stores, which no reader of this run may touch after).
    const settled = await Promise.allSettled(
      reads.map((reading) =>
        reading.catch((error: unknown) => {
          if (!abort.signal.aborted) abort.abort(error);
          throw error;
        }),
      ),
    );
    const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
    return { durationMs: Date.now() - started, records: total };
  };
  return { done: run(), cancel: () => abort.abort(new Error('restore cancelled')) };
}
