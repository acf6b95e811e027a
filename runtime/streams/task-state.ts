// The life of one input partition's task as one state machine (Kafka Streams' Task.State): the only
// owner of the partition's pause and resume, which it issues through a small consumer port.

/** What the task state machine needs from the consumer: pause and resume one partition. */
export interface PartitionPort {
  pause(topic: string, partition: number): void;
  resume(topic: string, partition: number): void;
}

/**
 * ASSIGNED: just assigned, paused, state not read yet. RESTORING: its changelogs are being read (a
 * failed restore stays here and is tried again after a back-off). RUNNING: resumed, its records are
 * processed. REVOKED: given back in a cooperative rebalance (its open transaction was committed
 * first). LOST: taken without notice (session lost, fenced): nothing of it may be committed. CLOSED:
 * its processor and stores are gone; nothing can bring it back (a new assignment makes a new task).
 */
export type TaskState = 'assigned' | 'restoring' | 'running' | 'revoked' | 'lost' | 'closed';

const LEGAL: Readonly<Record<TaskState, readonly TaskState[]>> = {
  assigned: ['restoring', 'revoked', 'lost', 'closed'],
  restoring: ['running', 'revoked', 'lost', 'closed'],
  running: ['revoked', 'lost', 'closed'],
  revoked: ['closed'],
  lost: ['closed'],
  closed: [],
};

export class IllegalTransitionError extends Error {
  override name = 'IllegalTransitionError';
  constructor(
    readonly from: TaskState,
    readonly to: TaskState,
    what: string,
  ) {
    super(`${what}: illegal task transition ${from} → ${to}`);
  }
}

export class TaskStateMachine {
  #state: TaskState = 'assigned';

  /** Created on an assignment: the partition is paused at once, before any of its records is fetched. */
  constructor(
    readonly topic: string,
    readonly partition: number,
    private readonly port: PartitionPort,
  ) {
    this.port.pause(topic, partition);
  }

  get state(): TaskState {
    return this.#state;
  }

  /** Whether its records are processed now. */
  get running(): boolean {
    return this.#state === 'running';
  }

  /** Still ours: neither given back, lost nor closed. */
  get owned(): boolean {
    return this.#state === 'assigned' || this.#state === 'restoring' || this.#state === 'running';
  }

  /** Moves to `to`, pausing or resuming the partition as the new state needs; throws on an illegal move. */
  transitionTo(to: TaskState): void {
    const from = this.#state;
    if (!LEGAL[from].includes(to))
      throw new IllegalTransitionError(from, to, `${this.topic}[${this.partition}]`);
    this.#state = to;
    if (to === 'running') this.port.resume(this.topic, this.partition);
    // Leaving RUNNING for any other state stops its fetching; a revoked or lost partition is
    // unassigned right after, and librdkafka may keep the pause flag: the next task resumes it.
    else if (from === 'running') this.port.pause(this.topic, this.partition);
  }
}
