// What a stream thread (stream-thread.ts, a child process running stages) and the process that started it
// (stream-threads.ts) say to each other. Plain data only: it crosses processes as JSON.
import type { ChildError, ChildMetrics, FromChild, ToChild } from '../runtime/child-processes.js';

/** Each thread's start: its number, its instance id, the stages it runs and the environment to configure them from. */
export interface StreamThreadData {
  index: number;
  instanceId: string;
  stages: string[];
  env: Record<string, string>;
}

/** The messages between a thread and its process: runtime/child-processes.ts's, as for any child. */
export type ThreadError = ChildError;
export type ThreadMetrics = ChildMetrics;
export type FromThread = FromChild;
export type ToThread = ToChild;

/** `<instance>-<n>`: each thread's consumer and transactional ids, Kafka Streams' stream thread alike. */
export function threadInstanceId(instanceId: string, index: number): string {
  return `${instanceId}-${index}`;
}
