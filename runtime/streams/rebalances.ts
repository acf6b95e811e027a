// Rebalances of a stream app instance: the consumer's callback only queues what happened and moves
// task states (revoked, lost); the poll loop then acts on the queue: a revoke commits the open
// transaction before the partitions are given back, a loss aborts it, an assignment makes paused tasks.
import { errorFields } from '../log-error.js';
import { NewClientsNeededError, RebalanceRefusedError, StateStoreFailedError } from './errors.js';
import type { RestoreOrchestrator } from './restore-orchestrator.js';
import { keyOf, nameOf, type RunnerContext } from './runner-context.js';
import type { StandbyFollower } from './standby-follower.js';
import type { StateDirs } from './state-dirs.js';
import type { TopicPartition } from './stream-clients.js';
import { StreamTask } from './stream-task.js';
import type { PartitionPort } from './task-state.js';
import type { SourceNode, Topology } from './topology.js';
import type { TransactionCycle } from './transaction-cycle.js';

type RebalanceEvent =
  | { kind: 'assign'; partitions: TopicPartition[] }
  | { kind: 'revoke'; partitions: TopicPartition[]; lost: boolean };

export interface RebalancesOptions<V> {
  topology: Topology<V>;
  restorer: RestoreOrchestrator<V>;
  cycle: TransactionCycle<V>;
  /** Where tasks keep their state on disk (undefined: in memory). */
  stateDirs?: StateDirs;
  /** Follows the partitions this instance does not own (PROCESSOR_STANDBY_REPLICAS), when set. */
  standby?: StandbyFollower<V>;
  /** The clock of rejoinWaitingMs (tests). */
  now?: () => number;
}

export class Rebalances<V> {
  readonly #events: RebalanceEvent[] = [];
  /** Set once the loop ended: callbacks (of the consumer's close, or an assignment after close) are acknowledged at once. */
  #finished = false;
  /** An assignment was handled: the instance has joined its group. */
  joined = false;
  /** When the last loss was handled, while no assignment has come since (a rejoin under way). */
  #lostAt: number | undefined;
  readonly #sources;
  /** Pause and resume for the task state machines (a partition already gone is fine). */
  readonly #port: PartitionPort;

  constructor(
    private readonly context: RunnerContext<V>,
    private readonly options: RebalancesOptions<V>,
  ) {
    this.#sources = new Map(options.topology.sources.map((s) => [s.topic, s]));
    const act = (what: 'pause' | 'resume') => (topic: string, partition: number) => {
      try {
        context.consumer[what]([{ topic, partition }]);
      } catch (error) {
        context.log.debug({ err: error, topic, partition }, `${what} failed (partition already gone)`);
      }
    };
    this.#port = { pause: act('pause'), resume: act('resume') };
  }

  /** Rebalances are waiting for the loop. */
  get pending(): boolean {
    return this.#events.length > 0;
  }

  /**
   * Milliseconds since partitions were lost with no assignment since (0: none lost, or one came). After
   * a loss the consumer rejoins by itself and every rejoin ends in an assignment, empty or not.
   */
  rejoinWaitingMs(now: number): number {
    return this.#lostAt === undefined ? 0 : now - this.#lostAt;
  }

  /** A loss is waiting: nothing of the open transaction may commit. */
  get lossPending(): boolean {
    return this.#events.some((e) => e.kind === 'revoke' && e.lost);
  }

  /** The consumer's rebalance callback: records what happened and moves task states; the loop acts on it. */
  onRebalance(kind: 'assign' | 'revoke' | 'error', partitions: TopicPartition[], error?: unknown): void {
    const { consumer, tasks, log } = this.context;
    if (this.#finished) {
      // The consumer closes (or the app stopped): nothing is processed any more, acknowledge at once.
      try {
        if (kind === 'assign') consumer.incrementalAssign(partitions);
        else if (kind === 'revoke') consumer.incrementalUnassign(partitions);
      } catch (err) {
        log.debug({ err }, 'rebalance acknowledgement after stop failed');
      }
      return;
    }
    if (kind === 'assign') {
      this.#events.push({ kind: 'assign', partitions });
    } else if (kind === 'revoke') {
      const lost = consumer.assignmentLost();
      for (const { topic, partition } of partitions) {
        const task = tasks.get(keyOf(topic, partition));
        if (task?.machine.owned) task.machine.transitionTo(lost ? 'lost' : 'revoked');
        // Another owner may already write its changelog: a checkpoint taken since may be past our state.
        if (lost) task?.forgetCheckpoint();
      }
      this.#events.push({ kind: 'revoke', partitions, lost });
    } else {
      log.error(errorFields(error), 'rebalance error');
    }
  }

  /** The loop's part: handles every queued rebalance, in order. */
  async handle(): Promise<void> {
    while (this.#events.length > 0 && !this.context.halted()) {
      const event = this.#events.shift()!;
      if (event.kind === 'assign') this.#assign(event.partitions);
      else await this.#revoke(event.partitions, event.lost);
    }
  }

  #assign(partitions: TopicPartition[]): void {
    const { tasks, log } = this.context;
    this.#apply('assign', partitions);
    this.joined = true;
    this.#lostAt = undefined;
    // The standby stops writing these partitions' directories (settled, checkpointed) before a task opens them.
    this.options.standby?.assigned(partitions);
    for (const { topic, partition } of partitions) {
      const source = this.#sources.get(topic);
      if (source === undefined) continue;
      const key = keyOf(topic, partition);
      const old = tasks.get(key);
      if (old !== undefined) this.options.restorer.closeTask(old);
      // A new task pauses its partition at once; it is resumed when its state is restored.
      tasks.set(key, this.#makeTask(source, partition));
    }
    log.info({ partitions: partitions.map(nameOf) }, 'partitions assigned');
  }

  /**
   * A task for an assigned partition. One that cannot be made (its state directory locked, unreadable,
   * on a full or read-only volume) stops the stage with one line: retried as a processing failure, the
   * assignment already handled, its partitions would have no task and be ignored until the next rebalance.
   */
  #makeTask(source: SourceNode<V>, partition: number): StreamTask<V> {
    try {
      return new StreamTask<V>({
        topology: this.options.topology,
        source,
        partition,
        port: this.#port,
        logger: this.context.log,
        stateDirs: this.options.stateDirs,
      });
    } catch (error) {
      const name = nameOf({ topic: source.topic, partition });
      const message = error instanceof Error ? error.message : String(error);
      const { stateDirs } = this.options;
      // The directory's own failures name it and say what to do; anything else (LMDB refusing the wipe
      // or a store's database: MDB_CORRUPTED, a full disk) is said here.
      const what =
        error instanceof StateStoreFailedError
          ? message
          : stateDirs === undefined
            ? message
            : `state directory ${stateDirs.path(source.topic, partition)} failed (${message}): remove it (its state is restored from the changelogs) or repair its volume`;
      throw new StateStoreFailedError(`the task of ${name} could not be made: ${what}`, { cause: error });
    }
  }

  async #revoke(partitions: TopicPartition[], lost: boolean): Promise<void> {
    const { tasks, log } = this.context;
    const { restorer } = this.options;
    // The partitions are given back whatever the transaction's end: until they are, the consumer
    // cannot finish its rebalance, so it never rejoins (a stall with no error, seen when the abort of a
    // lost partition's transaction timed out while its coordinator was down).
    let failure: unknown;
    try {
      await this.#endTransactionFor(lost);
    } catch (error) {
      failure = error;
    }
    for (const { topic, partition } of partitions) {
      const task = tasks.get(keyOf(topic, partition));
      if (task === undefined) continue;
      tasks.delete(keyOf(topic, partition));
      restorer.closeTask(task);
    }
    try {
      this.#apply('unassign', partitions);
    } catch (refused) {
      // The app stops either way; a store that failed stops it for good, not for new clients.
      throw failure instanceof StateStoreFailedError ? failure : refused;
    }
    // Closed above: the standby may write their directories now.
    this.options.standby?.revoked(partitions);
    if (lost) this.#lostAt ??= (this.options.now ?? Date.now)();
    log.info({ partitions: partitions.map(nameOf), lost }, lost ? 'partitions lost' : 'partitions revoked');
    // The producer's failure is the loop's to handle (abort again, replace the producer, or stop).
    if (failure !== undefined) throw failure;
  }

  /** Hands the rebalance to the consumer; a refusal stops the app for new clients (RebalanceRefusedError). */
  #apply(kind: 'assign' | 'unassign', partitions: TopicPartition[]): void {
    try {
      if (kind === 'assign') this.context.consumer.incrementalAssign(partitions);
      else this.context.consumer.incrementalUnassign(partitions);
    } catch (error) {
      const what = kind === 'assign' ? 'take the assignment of' : 'give back';
      const message = error instanceof Error ? error.message : String(error);
      throw new RebalanceRefusedError(`could not ${what} ${partitions.map(nameOf).join(', ')}: ${message}`, {
        cause: error,
      });
    }
  }

  /** Before partitions go: a loss aborts the open transaction, a revoke commits it (or aborts on failure). */
  async #endTransactionFor(lost: boolean): Promise<void> {
    const { cycle } = this.options;
    if (!cycle.inTransaction) return;
    // Lost: another member may own them already; nothing of this transaction may commit.
    if (lost) return cycle.abort('partitions lost');
    // Revoked in order: what was processed is committed before the partitions are given back. A commit
    // whose outcome is unknown cannot be aborted: the loop hands it over to new clients. Nor can one a
    // store failed to take after it went through: an abort would move the partitions it committed back
    // before their commit (their records sent again), and the stage must stop anyway.
    await cycle.commit().catch(async (error: unknown) => {
      if (error instanceof NewClientsNeededError || error instanceof StateStoreFailedError) throw error;
      this.context.log.warn(errorFields(error), 'commit before revoke failed; aborting');
      await cycle.abort('commit before revoke failed');
    });
  }

  /** The loop ended: from now on callbacks are acknowledged at once; what it did not handle is acknowledged now. */
  finish(): void {
    this.#finished = true;
    for (const event of this.#events.splice(0)) {
      try {
        if (event.kind === 'assign') this.context.consumer.incrementalAssign(event.partitions);
        else this.context.consumer.incrementalUnassign(event.partitions);
      } catch {
        // the consumer is going away
      }
    }
  }
}
