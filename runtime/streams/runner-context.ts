// What the parts of a stream app instance share (stream-runner.ts builds it): its consumer, its tasks
// by partition, its logger and instrumentation, and whether it is stopping.
import type { Logger } from '../log.js';
import { errorFields } from '../log-error.js';
import { NewClientsNeededError } from './errors.js';
import type { StreamConsumer } from './stream-clients.js';
import type { Instrument, StreamTask } from './stream-task.js';

export interface RunnerContext<V> {
  readonly log: Logger;
  readonly consumer: StreamConsumer;
  /** Every task of an assigned source partition, by `keyOf(topic, partition)`. */
  readonly tasks: Map<string, StreamTask<V>>;
  readonly instrument: Instrument;
  /** Closing, or stopped by a failure: the loop ends. */
  halted(): boolean;
  closing(): boolean;
  /**
   * Stops the app with a reason (the first one wins). While closing it only makes the close abort its
   * open transaction: something failed, and what the transaction holds may be half done.
   */
  stop(error: Error): void;
}

export const keyOf = (topic: string, partition: number): string => `${topic}\u0000${partition}`;

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** `topic[partition]`, as logs and readiness reasons name a partition. */
export const nameOf = (t: { topic: string; partition: number }): string => `${t.topic}[${t.partition}]`;

/**
 * Moves the consumer of a task's partition to `offset`. A partition that is no longer running (revoked,
 * lost while this waited) needs no position. A running one that cannot be moved would read on from
 * wherever the consumer is, past records never processed: the app stops and starts again with new
 * clients, which read from the committed offsets.
 */
export async function seekTask<V>(
  context: RunnerContext<V>,
  task: StreamTask<V>,
  offset: number,
): Promise<void> {
  try {
    await context.consumer.seek({ topic: task.topic, partition: task.partition }, offset);
  } catch (error) {
    const fields = {
      ...errorFields(error),
      topic: task.topic,
      partition: task.partition,
      offset: String(offset),
    };
    if (!task.machine.running) {
      context.log.debug(fields, 'seek of a partition no longer running failed');
      return;
    }
    context.stop(
      new NewClientsNeededError(
        `could not move ${nameOf(task)} to offset ${offset}: ${(error as Error).message ?? String(error)}`,
        { cause: error },
      ),
    );
  }
}
