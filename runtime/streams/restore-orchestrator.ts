// Restores beside the poll loop: newly assigned tasks look up the group's committed offset, then read
// their changelogs (paused meanwhile); a failed restore is retried after a back-off, and a restored task
// resumes from that committed offset.

import { errorFields } from '../log-error.js';
import { NewClientsNeededError } from './errors.js';
import type { RestoreRun } from './restore.js';
import { backoffDelay } from './retry.js';
import { nameOf, type RunnerContext } from './runner-context.js';
import type { StreamTask } from './stream-task.js';

/** Starts one restore of the given tasks' stores (restore.ts's restoreTasks, or a fake). */
export type RestoreTasks<V> = (tasks: readonly StreamTask<V>[]) => RestoreRun;

export interface RestoreOrchestratorOptions {
  retryInitialMs?: number;
  retryMaxMs?: number;
}

export class RestoreOrchestrator<V> {
  readonly #runs = new Map<StreamTask<V>, RestoreRun>();

  constructor(
    private readonly context: RunnerContext<V>,
    private readonly restore: RestoreTasks<V>,
    private readonly options: RestoreOrchestratorOptions = {},
  ) {}

  /**
   * Called by the loop each cycle: starts restores of new tasks and of failed ones whose back-off is
   * over, and moves restored tasks to RUNNING (seeking to the committed offset first). Never waits for
   * a read; waits for the seeks of the tasks it starts running.
   */
  async advance(now = Date.now()): Promise<void> {
    const due: StreamTask<V>[] = [];
    const restored: StreamTask<V>[] = [];
    for (const task of this.context.tasks.values()) {
      if (task.state === 'assigned') {
        task.machine.transitionTo('restoring');
        due.push(task);
      } else if (task.state === 'restoring') {
        if (task.restore.done) restored.push(task);
        else if (task.restore.attempt === undefined && now >= task.restore.retryAt) due.push(task);
      }
    }
    if (due.length > 0) this.#start(due);
    for (const task of restored) await this.#run(task);
  }

  async #run(task: StreamTask<V>): Promise<void> {
    // From the group's committed offset (or the first record handed over while it was paused, when the
    // group has none), sought while the partition is still paused: once it resumes, nothing fetched
    // from where it stood before can be handed over.
    const from = task.position.readNext();
    if (from !== undefined) {
      try {
        await this.context.consumer.seek({ topic: task.topic, partition: task.partition }, from);
      } catch (error) {
        if (task.state !== 'restoring') return; // revoked or lost meanwhile: no position needed
        this.context.stop(
          new NewClientsNeededError(
            `could not move ${nameOf(task)} to offset ${from} before it runs: ${(error as Error).message ?? String(error)}`,
            { cause: error },
          ),
        );
        return;
      }
    }
    if (task.state !== 'restoring') return;
    task.machine.transitionTo('running');
    // One line per partition at debug: `changelogs restored` already names them at info.
    task.log.debug(
      { streamTime: task.streamTime, stores: Object.fromEntries(task.storeSizes()) },
      'partition restored and running',
    );
  }

  #start(due: StreamTask<V>[]): void {
    const { log, instrument } = this.context;
    const run = this.#lookUpThenRestore(due);
    for (const task of due) this.#runs.set(task, run);
    const attempt = run.done.then(
      ({ durationMs, records }) => {
        for (const task of due) {
          this.#settled(task, run);
          if (task.state !== 'restoring') continue;
          try {
            task.finishRestore();
          } catch (error) {
            // Its last write refused (a full disk) or its processor not starting: a failed attempt like
            // a read that fails (retried, named in readiness), not a rejection nobody handles.
            this.#failed(task, error);
            log.warn(
              { ...errorFields(error), partition: nameOf(task) },
              'restore failed; retrying after a back-off',
            );
            continue;
          }
          task.restore.done = true;
          task.restore.failures = 0;
          task.restore.lastError = undefined;
        }
        for (const topic of new Set(due.flatMap((t) => t.changelogs().map((c) => c.topic))))
          instrument('stream.restore', { topic }, durationMs / 1000);
        log.info({ partitions: due.map(nameOf), records, durationMs }, 'changelogs restored');
      },
      (error: unknown) => {
        for (const task of due) {
          this.#settled(task, run);
          if (task.state === 'restoring') this.#failed(task, error);
        }
        if (!this.context.closing())
          log.warn(
            { ...errorFields(error), partitions: due.map(nameOf) },
            'restore failed; retrying after a back-off',
          );
      },
    );
    for (const task of due) task.restore.attempt = attempt;
  }

  /**
   * The group's committed offsets first, then the restore. A read_committed lookup waits while offsets
   * of a transaction are pending for the partition (a previous owner's last commit, still under way),
   * and the restore fixes each changelog's end only after it: the state read holds every transaction
   * whose offset the task starts from. The other way round, such a commit could land between the
   * restore's end and the lookup, and the task started past records whose state it never read.
   */
  #lookUpThenRestore(due: readonly StreamTask<V>[]): RestoreRun {
    let restoring: RestoreRun | undefined;
    let cancelled: Error | undefined;
    const done = this.#lookUpCommitted(due).then(() => {
      if (cancelled !== undefined) throw cancelled;
      // Not a task closed during the lookup: its stores are closed, a restore must not open them again.
      restoring = this.restore(due.filter((t) => t.state === 'restoring'));
      return restoring.done;
    });
    return {
      done,
      cancel: () => {
        cancelled ??= new Error('restore cancelled');
        restoring?.cancel();
      },
    };
  }

  /** A restore attempt of the task failed: it is tried again after a back-off. */
  #failed(task: StreamTask<V>, error: unknown): void {
    const { retryInitialMs = 500, retryMaxMs = 30_000 } = this.options;
    task.restore.failures++;
    task.restore.lastError = error instanceof Error ? error.message : String(error);
    task.restore.retryAt = Date.now() + backoffDelay(task.restore.failures, retryInitialMs, retryMaxMs);
  }

  #settled(task: StreamTask<V>, run: RestoreRun): void {
    if (this.#runs.get(task) === run) this.#runs.delete(task);
    task.restore.attempt = undefined;
  }

  /** Closes a task; its restore's reader goes once none of that restore's tasks wants it (a revoke during restore). */
  closeTask(task: StreamTask<V>): void {
    const run = this.#runs.get(task);
    this.#runs.delete(task);
    task.close();
    // Its lag is the next owner's to report: a series left behind would add a frozen backlog to the sum.
    this.context.instrument('stream.lag.gone', { topic: task.topic, partition: String(task.partition) });
    if (run !== undefined && ![...this.#runs.values()].includes(run)) run.cancel();
  }

  /** Where each task starts: the group's committed offset (looked up while it is still paused). */
  async #lookUpCommitted(due: readonly StreamTask<V>[]): Promise<void> {
    if (due.length === 0) return;
    const found = await this.context.consumer.committed(
      due.map((t) => ({ topic: t.topic, partition: t.partition })),
      10_000,
    );
    for (const { topic, partition, offset } of found) {
      const task = due.find((t) => t.topic === topic && t.partition === partition);
      if (task !== undefined && typeof offset === 'number' && offset >= 0) task.position.start(offset);
    }
  }
}
