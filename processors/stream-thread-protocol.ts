// What a stream thread (stream-thread.ts, a worker_thread running stages) and the process that started it
// (stream-threads.ts) say to each other. Plain data only: it crosses threads by structured clone.
import type { MetricObjectWithValues, MetricValue } from 'prom-client';
import type { Readiness } from '../runtime/streams/ops-server.js';

/** Each thread's start: its number, its instance id, the stages it runs and the environment to configure them from. */
export interface StreamThreadData {
  index: number;
  instanceId: string;
  stages: string[];
  env: Record<string, string>;
}

/** A start failure as the process tells it: the message, a registry status, whether Kafka refused or was out of reach. */
export interface ThreadError {
  message: string;
  status?: number;
  cluster: boolean;
}

export type ThreadMetrics = MetricObjectWithValues<MetricValue<string>>[];

/** From a thread to the process. */
export type FromThread =
  | { type: 'running' }
  | { type: 'start-failed'; error: ThreadError }
  | { type: 'readiness'; readiness: Record<string, Readiness> }
  | { type: 'stopped'; stage: string; failure?: string }
  | { type: 'metrics'; id: number; metrics: ThreadMetrics }
  | { type: 'closed' };

/** From the process to a thread. */
export type ToThread = { type: 'metrics'; id: number } | { type: 'close' };

/** `<instance>-<n>`: each thread's consumer and transactional ids, Kafka Streams' stream thread alike. */
export function threadInstanceId(instanceId: string, index: number): string {
  return `${instanceId}-${index}`;
}
