// What the parts of a stream app instance share (stream-runner.ts builds it): its consumer, its tasks
// by partition, its logger and instrumentation, and whether it is stopping.
import type { Logger } from '../log.js';
import { errorFields } from '../log-error.js';
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
  /** Stops the app with a reason (the first one wins; none while closing). */
  stop(error: Error): void;
}

export const keyOf = (topic: string, partition: number): string => `${topic}\u0000${partition}`;

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** `topic[partition]`, as logs and readiness reasons name a partition. */
export const nameOf = (t: { topic: string; partition: number }): string => `${t.topic}[${t.partition}]`;

/** Moves the consumer of a task's partition to `offset`; a failure is logged (the partition may be gone). */
export function seekTask<V>(context: RunnerContext<V>, task: StreamTask<V>, offset: bigint): Promise<void> {
  return context.consumer
    .seek({ topic: task.topic, partition: task.partition }, Number(offset))
    .catch((error: unknown) =>
      context.log.warn(
        { ...errorFields(error), topic: task.topic, partition: task.partition, offset: String(offset) },
        'seek failed',
      ),
    );
}
