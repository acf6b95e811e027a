// Checkpoints of the tasks whose state is on disk, taken after a commit once a second at most: each of
// a task's changelog partitions' last stable offset as the brokers answer it then (the consumer reads
// read_committed, so it is told the LSO: no further than the first record of a transaction still
// undecided, at most the high watermark). The state on disk holds everything below it (the commit's
// writes reached the disk before the question was asked, and no changelog record of the next
// transaction is sent before the answer is in: commit() waits for it), so a restart restores only what
// the changelog got after it. The LSO may lag the commit just made (its markers are written after the
// coordinator answers): the next checkpoint covers it; a checkpoint behind the state costs only a replay.
import type { Logger } from '../log.js';
import { StateStoreFailedError } from './errors.js';
import type { StreamConsumer } from './stream-clients.js';
import type { StreamTask } from './stream-task.js';

/** How long an answer may take: the next commit waits for it before it writes a changelog record. */
const QUERY_TIMEOUT_MS = 5_000;

export class CheckpointWriter<V> {
  #pending: Promise<void> | undefined;
  #lastAt = 0;
  /** Tasks on disk that committed something since their last checkpoint. */
  #due = new Set<StreamTask<V>>();
  /** A store that could not write its committed batch with a checkpoint (a full disk): the next commit stops. */
  #failure: StateStoreFailedError | undefined;

  constructor(
    private readonly consumer: Pick<StreamConsumer, 'queryHighWatermark'>,
    private readonly log: Logger,
    private readonly intervalMs = 1_000,
  ) {}

  /** A commit went through for these tasks: a checkpoint starts if the last one is old enough. */
  committed(tasks: readonly StreamTask<V>[], now = Date.now()): void {
    for (const task of tasks) if (task.stateDir !== undefined) this.#due.add(task);
    if (this.#pending !== undefined || this.#due.size === 0 || now - this.#lastAt < this.intervalMs) return;
    const consumer = this.consumer;
    if (consumer.queryHighWatermark === undefined) return;
    this.#lastAt = now;
    const due = [...this.#due].map((task) => ({ task, streamTime: task.committedStreamTime }));
    this.#due.clear();
    this.#pending = (async () => {
      for (const [i, { task, streamTime }] of due.entries()) {
        // Its directory still writes the last checkpoint: this one waits for the next (its committed
        // state waits in memory meanwhile), one write in flight a directory.
        if (task.stateDir?.writing) {
          this.#due.add(task);
          continue;
        }
        const offsets = new Map<string, bigint>();
        try {
          for (const { topic } of task.changelogs())
            offsets.set(
              topic,
              BigInt(await consumer.queryHighWatermark!(topic, task.partition, QUERY_TIMEOUT_MS)),
            );
        } catch (error) {
          // No answer: this task and the ones after it stay due, for the checkpoint after the next
          // commit of any task (one that commits nothing more would otherwise never get one).
          for (const left of due.slice(i)) this.#due.add(left.task);
          throw error;
        }
        if (task.stateDir?.writing) {
          this.#due.add(task);
          continue;
        }
        try {
          // Written by LMDB's thread (a store on disk that can): not waited for, the next commit goes
          // on meanwhile; a refusal stops the first commit after it.
          task.checkpoint(offsets, streamTime)?.catch((error: unknown) => this.#failed(task, error));
        } catch (error) {
          this.#failed(task, error);
          return;
        }
      }
    })()
      .catch((error: unknown) =>
        this.log.debug({ err: error }, 'checkpoint not taken (retried after the next commit)'),
      )
      .finally(() => {
        this.#pending = undefined;
      });
  }

  /**
   * A store could not write its committed state with a checkpoint: it keeps it in memory (recognised),
   * but only a restore from the checkpoint, which is behind it, would give it back after a restart.
   */
  #failed(task: StreamTask<V>, error: unknown): void {
    this.#failure ??= new StateStoreFailedError(
      `the state store of ${task.topic}[${task.partition}] could not write its committed state with a checkpoint (${(error as Error).message ?? String(error)}): stopping`,
      { cause: error },
    );
  }

  /**
   * Waits for a checkpoint in progress: no changelog record may be written before its answer. Throws a
   * StateStoreFailedError when a store could not write (the stage stops).
   */
  async settled(): Promise<void> {
    await this.#pending;
    if (this.#failure !== undefined) throw this.#failure;
  }
}
