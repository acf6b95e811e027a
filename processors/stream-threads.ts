// `hookledger process --threads N`: N stream threads under one command, Kafka Streams' num.stream.threads.
// Each thread (stream-thread.ts) has its own consumer, transactional producer and tasks (instance ids
// `<instance>-<n>`), in a child process of its own: librdkafka's Node binding cannot be loaded in a
// worker_thread (it is not context-aware: confluent-kafka-javascript#258). They share nothing but the
// command's /healthz, /readyz and /metrics, served here. One thread's stage stopping, or a thread ending,
// stops the command, as a stage stopping does with one thread: the orchestrator restarts it.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { AggregatorRegistry } from 'prom-client';
import type { Config } from '../runtime/config.js';
import type { Logger } from '../runtime/log.js';
import type { OpsServer, Readiness } from '../runtime/streams/ops-server.js';
import { assertReachable, processRegistry, startProcessorOps } from './main.js';
import {
  type FromThread,
  type StreamThreadData,
  type ThreadError,
  type ThreadMetrics,
  type ToThread,
  threadInstanceId,
} from './stream-thread-protocol.js';

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

/** What the supervisor needs of a thread: a child process (childHandle), or a fake in unit tests. */
export interface ThreadHandle {
  post(message: ToThread): void;
  onMessage(listener: (message: FromThread) => void): void;
  /** Called once when the thread has ended, for whatever reason. */
  onExit(listener: (code: number) => void): void;
  terminate(): Promise<unknown>;
}

type ThreadState = 'starting' | 'running' | 'closing' | 'ended';

interface Thread {
  index: number;
  handle: ThreadHandle;
  state: ThreadState;
  readiness: Record<string, Readiness>;
  /** When it last said anything (it repeats its readiness every second while its event loop turns). */
  heardAt: number;
}

/**
 * A running thread silent this long is not ready: its event loop is blocked (a CPU-bound bug), so its
 * own stall watchdog cannot run, and the readiness it last sent would stay green for ever.
 */
export const THREAD_SILENT_MS = 5_000;
/** /metrics answers with what has arrived by then: a blocked thread must not hold the scrape for ever. */
export const THREAD_METRICS_TIMEOUT_MS = 5_000;

/** Why the process should end: a stage of a thread stopped by itself, or a thread ended unasked. */
export interface ThreadsStopped {
  stage: string;
  failure?: string;
}

/** How long `close` waits for a thread to close its stages before it terminates the thread. */
const CLOSE_TIMEOUT_MS = 25_000;

/**
 * The process side of N stream threads, a state machine per thread: starting → running → closing →
 * ended; `ended` from any state when the thread exits. Readiness is per stage, ready when every
 * thread's is; metrics are every running thread's, asked for when /metrics is.
 */
export class StreamThreads {
  readonly #threads: Thread[];
  readonly #stages: readonly string[];
  readonly #started: Promise<void>;
  readonly #stopped: Promise<ThreadsStopped>;
  #resolveStopped!: (stopped: ThreadsStopped) => void;
  #requests = 0;
  readonly #pending = new Map<number, { waiting: number; metrics: ThreadMetrics[]; done: () => void }>();
  #closing = false;

  readonly #now: () => number;
  readonly #metricsTimeoutMs: number;

  constructor(
    count: number,
    stages: readonly string[],
    spawn: (index: number) => ThreadHandle,
    { now = Date.now, metricsTimeoutMs = THREAD_METRICS_TIMEOUT_MS } = {},
  ) {
    this.#now = now;
    this.#metricsTimeoutMs = metricsTimeoutMs;
    this.#stages = stages;
    this.#stopped = new Promise((resolve) => {
      this.#resolveStopped = resolve;
    });
    let resolveStarted!: () => void;
    let rejectStarted!: (error: Error) => void;
    this.#started = new Promise((resolve, reject) => {
      resolveStarted = resolve;
      rejectStarted = reject;
    });
    this.#started.catch(() => {});
    this.#threads = Array.from({ length: count }, (_, index) => {
      const thread: Thread = {
        index,
        handle: spawn(index),
        state: 'starting',
        readiness: {},
        heardAt: now(),
      };
      thread.handle.onMessage((message) => {
        thread.heardAt = this.#now();
        switch (message.type) {
          case 'running':
            if (thread.state === 'starting') thread.state = 'running';
            if (this.#threads.every((t) => t.state === 'running')) resolveStarted();
            break;
          case 'start-failed':
            rejectStarted(new StreamThreadStartError(index, message.error));
            break;
          case 'readiness':
            thread.readiness = message.readiness;
            break;
          case 'stopped':
            this.#resolveStopped({
              stage: message.stage,
              failure: `stream thread ${index}: ${message.failure ?? 'stopped by itself'}`,
            });
            break;
          case 'metrics':
            this.#answer(message.id, message.metrics);
            break;
          case 'closed':
            break;
        }
      });
      thread.handle.onExit((code) => {
        const was = thread.state;
        thread.state = 'ended';
        // A thread that ends before it has answered leaves nothing to wait for.
        for (const id of [...this.#pending.keys()]) this.#answer(id, []);
        if (was === 'starting')
          rejectStarted(
            new StreamThreadStartError(index, { message: `exited with code ${code}`, cluster: false }),
          );
        else if (was === 'running' && !this.#closing)
          this.#resolveStopped({
            stage: this.#stages[0]!,
            failure: `stream thread ${index} exited with code ${code}`,
          });
      });
      return thread;
    });
  }

  /** Resolves once every thread runs its stages; rejects with the first thread's start failure. */
  started(): Promise<void> {
    return this.#started;
  }

  /** Resolves when the process should end by itself: a thread's stage stopped, or a thread ended. */
  get stopped(): Promise<ThreadsStopped> {
    return this.#stopped;
  }

  /**
   * A stage is ready when it is in every thread; the reasons name the thread. Bytes on disk are the
   * threads' sum; a standby copy's lag the largest of the threads following that partition.
   */
  readiness(stage: string): Readiness {
    const reasons: string[] = [];
    let ready = true;
    let stateDiskBytes: number | undefined;
    let standbyLag: Record<string, number> | undefined;
    const now = this.#now();
    for (const thread of this.#threads) {
      const silentMs = now - thread.heardAt;
      if (thread.state === 'running' && silentMs > THREAD_SILENT_MS) {
        ready = false;
        reasons.push(
          `thread ${thread.index}: silent for ${Math.round(silentMs / 1000)} s (its event loop is blocked)`,
        );
        continue;
      }
      const readiness = thread.readiness[stage];
      if (readiness?.stateDiskBytes !== undefined)
        stateDiskBytes = (stateDiskBytes ?? 0) + readiness.stateDiskBytes;
      for (const [partition, behind] of Object.entries(readiness?.standbyLag ?? {})) {
        standbyLag ??= {};
        standbyLag[partition] = Math.max(standbyLag[partition] ?? 0, behind);
      }
      if (readiness?.ready) continue;
      ready = false;
      const why = readiness === undefined ? ['starting'] : (readiness.reasons ?? []);
      reasons.push(...why.map((reason) => `thread ${thread.index}: ${reason}`));
    }
    return {
      ready,
      ...(ready ? {} : { reasons }),
      ...(stateDiskBytes === undefined ? {} : { stateDiskBytes }),
      ...(standbyLag === undefined ? {} : { standbyLag }),
    };
  }

  /** Every running thread's series, as prom-client's JSON. */
  metrics(): Promise<ThreadMetrics[]> {
    const running = this.#threads.filter((t) => t.state === 'running');
    if (running.length === 0) return Promise.resolve([]);
    const id = ++this.#requests;
    return new Promise((resolve) => {
      const late = setTimeout(() => {
        this.#pending.delete(id);
        resolve(request.metrics);
      }, this.#metricsTimeoutMs);
      const request = {
        waiting: running.length,
        metrics: [] as ThreadMetrics[],
        done: () => {
          clearTimeout(late);
          resolve(request.metrics);
        },
      };
      this.#pending.set(id, request);
      for (const thread of running) thread.handle.post({ type: 'metrics', id });
    });
  }

  #answer(id: number, metrics: ThreadMetrics): void {
    const request = this.#pending.get(id);
    if (!request) return;
    request.metrics.push(metrics);
    if (--request.waiting > 0) return;
    this.#pending.delete(id);
    request.done();
  }

  /** Asks every thread to close its stages, and terminates one that has not ended within the timeout. */
  async close(timeoutMs = CLOSE_TIMEOUT_MS): Promise<void> {
    this.#closing = true;
    await Promise.all(
      this.#threads.map(async (thread) => {
        if (thread.state === 'ended') return;
        const ended = new Promise<void>((resolve) => thread.handle.onExit(() => resolve()));
        thread.state = 'closing';
        thread.handle.post({ type: 'close' });
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<'late'>((resolve) => {
          timer = setTimeout(() => resolve('late'), timeoutMs);
        });
        if ((await Promise.race([ended, late])) === 'late') await thread.handle.terminate();
        clearTimeout(timer);
      }),
    );
  }
}

/** A child process as a ThreadHandle, running stream-thread.ts (through tsx's loader in a checkout). */
function childHandle(data: StreamThreadData): ThreadHandle {
  const sources = import.meta.url.endsWith('.ts');
  const entry = fileURLToPath(new URL(`./stream-thread.${sources ? 'ts' : 'js'}`, import.meta.url));
  const child = fork(entry, {
    // A checkout runs its TypeScript through tsx, as tools/cli/hookledger.js does.
    execArgv: sources ? ['--import', import.meta.resolve('tsx')] : [],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  child.send(data);
  const exitListeners: ((code: number) => void)[] = [];
  let exitCode: number | undefined;
  child.once('exit', (code, signal) => {
    exitCode = code ?? (signal ? 128 : 1);
    for (const listener of exitListeners) listener(exitCode);
  });
  return {
    post: (message) => {
      if (child.connected) child.send(message);
    },
    onMessage: (listener) => child.on('message', (message) => listener(message as FromThread)),
    onExit: (listener) => {
      if (exitCode === undefined) exitListeners.push(listener);
      else listener(exitCode);
    },
    terminate: async () => {
      if (exitCode === undefined) child.kill('SIGKILL');
    },
  };
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
