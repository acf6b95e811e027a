// `hookledger process --threads N`: N stream threads under one command, Kafka Streams' num.stream.threads.
// Each thread (stream-thread.ts) has its own consumer, transactional producer and tasks (instance ids
// `<instance>-<n>`), in a child process of its own: librdkafka's Node binding cannot be loaded in a
// worker_thread (it is not context-aware: confluent-kafka-javascript#258). They share nothing but the
// command's /healthz, /readyz and /metrics, served here. One thread's stage stopping, or a thread ending,
// stops the command, as a stage stopping does with one thread: the orchestrator restarts it.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { AggregatorRegistry } from 'prom-client';
import {
  CHILD_METRICS_TIMEOUT_MS,
  CHILD_SILENT_MS,
  type ChildHandle,
  ChildProcesses,
  type ChildrenStopped,
  ipcChildHandle,
} from '../runtime/child-processes.js';
import type { Config } from '../runtime/config.js';
import type { Logger } from '../runtime/log.js';
import type { OpsServer } from '../runtime/streams/ops-server.js';
import { assertReachable, processRegistry, startProcessorOps } from './main.js';
import { type StreamThreadData, type ThreadError, threadInstanceId } from './stream-thread-protocol.js';

/** A thread's start that failed: its message, and what the CLI needs to say it in one line. */
export class StreamThreadStartError extends Error {
  override name = 'StreamThreadStartError';
  readonly status: number | undefined;
  readonly cluster: boolean;

  constructor(thread: number, error: ThreadError) {
    super(`stream thread ${thread}: ${error.message}`);
    this.status = error.status;
    this.cluster = error.cluster;
  }
}

/** What the supervisor needs of a thread: a child process, or a fake in unit tests. */
export type ThreadHandle = ChildHandle;
export type ThreadsStopped = ChildrenStopped;
export const THREAD_SILENT_MS = CHILD_SILENT_MS;
export const THREAD_METRICS_TIMEOUT_MS = CHILD_METRICS_TIMEOUT_MS;

/**
 * The process side of N stream threads (runtime/child-processes.ts): ready for a stage when every
 * thread is; a thread's stage that stops, or a thread that ends unasked, ends the process.
 */
export class StreamThreads extends ChildProcesses {
  constructor(
    count: number,
    stages: readonly string[],
    spawn: (index: number) => ThreadHandle,
    options: { now?: () => number; metricsTimeoutMs?: number } = {},
  ) {
    super(count, stages, spawn, {
      label: 'stream thread',
      shortLabel: 'thread',
      startError: (index, error) => new StreamThreadStartError(index, error),
      ...options,
    });
  }
}

/** A child process running stream-thread.ts (through tsx's loader in a checkout). */
function childHandle(data: StreamThreadData): ThreadHandle {
  const sources = import.meta.url.endsWith('.ts');
  const entry = fileURLToPath(new URL(`./stream-thread.${sources ? 'ts' : 'js'}`, import.meta.url));
  const child = fork(entry, {
    // A checkout runs its TypeScript through tsx, as tools/cli/hookledger.js does.
    execArgv: sources ? ['--import', import.meta.resolve('tsx')] : [],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  child.send(data);
  return ipcChildHandle(child);
}

export interface StreamThreadsSettings {
  config: Config;
  /** The environment the configuration was read from: each thread reads its own from it. */
  env: NodeJS.ProcessEnv;
  logger: Logger;
  stages: string[];
  threads: number;
}

export interface RunningStreamThreads {
  ops: OpsServer;
  /** Resolves when the process should end by itself: a thread's stage stopped, or a thread ended. */
  stopped: Promise<ThreadsStopped>;
  /** Ops server first (unready), then every thread. */
  close(): Promise<void>;
}

export async function startStreamThreads({
  config,
  env,
  logger,
  stages,
  threads: count,
}: StreamThreadsSettings): Promise<RunningStreamThreads> {
  await assertReachable(config);
  const own = processRegistry();
  let threads: StreamThreads | undefined;
  const metrics = {
    contentType: own.contentType,
    // Each thread's series, summed where two threads have the same one (prom-client's cluster aggregation).
    metrics: async () =>
      AggregatorRegistry.aggregate([
        await own.getMetricsAsJSON(),
        ...((await threads?.metrics()) ?? []),
      ]).metrics(),
  };
  // Listening first: a port in use stops the start before any thread joins the group.
  const ops = await startProcessorOps(
    config,
    metrics,
    Object.fromEntries(
      stages.map((stage) => [
        stage,
        () => threads?.readiness(stage) ?? { ready: false, reasons: ['starting'] },
      ]),
    ),
  );
  const plainEnv = Object.fromEntries(
    Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined),
  );
  const running = new StreamThreads(count, stages, (index) =>
    childHandle({
      index,
      instanceId: threadInstanceId(config.HOOKLEDGER_INSTANCE_ID, index),
      stages,
      env: plainEnv,
    }),
  );
  threads = running;
  try {
    await running.started();
  } catch (error) {
    await ops.close();
    await running.close();
    throw error;
  }
  logger.info({ url: ops.url, stages, threads: count }, 'processors running');
  return {
    ops,
    stopped: running.stopped,
    async close() {
      await ops.close();
      await running.close();
    },
  };
}
