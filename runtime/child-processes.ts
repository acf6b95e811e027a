// N child processes under one command that speak for it together: `process --threads N` (stream threads)
// and `ingest --workers N` (HTTP workers on one port). Each child reports its readiness per part (a
// stage, a check) and answers for its metrics over IPC; the command serves one /readyz and one /metrics
// for all of them. A child that ends unasked ends the command: the orchestrator restarts it whole.
import type { ChildProcess } from 'node:child_process';
import type { Worker } from 'node:cluster';
import type { MetricObjectWithValues, MetricValue } from 'prom-client';
import { exitProcess } from './exit.js';
import type { Readiness } from './streams/ops-server.js';

/** A start failure as the child tells it: the message, a registry status, whether Kafka refused or was out of reach. */
export interface ChildError {
  message: string;
  status?: number;
  cluster: boolean;
}

export type ChildMetrics = MetricObjectWithValues<MetricValue<string>>[];

/** From a child to the command. Plain data only: it crosses processes as JSON. */
export type FromChild =
  | { type: 'running' }
  | { type: 'start-failed'; error: ChildError }
  | { type: 'readiness'; readiness: Record<string, Readiness> }
  | { type: 'stopped'; stage: string; failure?: string }
  | { type: 'metrics'; id: number; metrics: ChildMetrics }
  | { type: 'closed' }
  /** For the other children: the command passes it on to each of them. */
  | { type: 'peer'; event: unknown };

/** From the command to a child. */
export type ToChild =
  | { type: 'metrics'; id: number }
  | { type: 'close' }
  /** What another child said to its peers. */
  | { type: 'peer'; event: unknown };

/** What the supervisor needs of a child: a child process (ipcChildHandle), or a fake in unit tests. */
export interface ChildHandle {
  post(message: ToChild): void;
  onMessage(listener: (message: FromChild) => void): void;
  /** Called once when the child has ended, for whatever reason. */
  onExit(listener: (code: number) => void): void;
  terminate(): Promise<unknown>;
}

type ChildState = 'starting' | 'running' | 'closing' | 'ended';

interface Child {
  index: number;
  handle: ChildHandle;
  state: ChildState;
  readiness: Record<string, Readiness>;
  /** When it last said anything (it repeats its readiness every second while its event loop turns). */
  heardAt: number;
}

/**
 * A running child silent this long is not ready: its event loop is blocked (a CPU-bound bug), so its
 * own stall watchdog cannot run, and the readiness it last sent would stay green for ever.
 */
export const CHILD_SILENT_MS = 5_000;
/** /metrics answers with what has arrived by then: a blocked child must not hold the scrape for ever. */
export const CHILD_METRICS_TIMEOUT_MS = 5_000;

/** Why the command should end: a part of a child stopped by itself, or a child ended unasked. */
export interface ChildrenStopped {
  stage: string;
  failure?: string;
}

/** How long `close` waits for a child to close before it terminates the child. */
const CLOSE_TIMEOUT_MS = 25_000;

export interface ChildProcessesOptions {
  /** What a child is called in messages: `${label} 1: …` ("stream thread"), and `${shortLabel} 1: …` in reasons. */
  label: string;
  shortLabel: string;
  /** The error a start failure rejects `started()` with. */
  startError: (index: number, error: ChildError) => Error;
  now?: () => number;
  metricsTimeoutMs?: number;
}

/**
 * The command's side of N children, a state machine per child: starting → running → closing → ended;
 * `ended` from any state when the child exits. Readiness is per part, ready when every child's is;
 * metrics are every running child's, asked for when /metrics is.
 */
export class ChildProcesses {
  readonly #children: Child[];
  readonly #parts: readonly string[];
  readonly #started: Promise<void>;
  readonly #stopped: Promise<ChildrenStopped>;
  #resolveStopped!: (stopped: ChildrenStopped) => void;
  #requests = 0;
  readonly #pending = new Map<number, { waiting: number; metrics: ChildMetrics[]; done: () => void }>();
  #closing = false;

  readonly #shortLabel: string;
  readonly #now: () => number;
  readonly #metricsTimeoutMs: number;

  /** `parts`: what a child reports readiness for (its stages); the first names an unasked exit. */
  constructor(
    count: number,
    parts: readonly string[],
    spawn: (index: number) => ChildHandle,
    {
      label,
      shortLabel,
      startError,
      now = Date.now,
      metricsTimeoutMs = CHILD_METRICS_TIMEOUT_MS,
    }: ChildProcessesOptions,
  ) {
    this.#shortLabel = shortLabel;
    this.#now = now;
    this.#metricsTimeoutMs = metricsTimeoutMs;
    this.#parts = parts;
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
    this.#children = Array.from({ length: count }, (_, index) => {
      const child: Child = {
        index,
        handle: spawn(index),
        state: 'starting',
        readiness: {},
        heardAt: now(),
      };
      child.handle.onMessage((message) => {
        child.heardAt = this.#now();
        switch (message.type) {
          case 'running':
            if (child.state === 'starting') child.state = 'running';
            if (this.#children.every((c) => c.state === 'running')) resolveStarted();
            break;
          case 'start-failed':
            rejectStarted(startError(index, message.error));
            break;
          case 'readiness':
            child.readiness = message.readiness;
            break;
          case 'stopped':
            this.#resolveStopped({
              stage: message.stage,
              failure: `${label} ${index}: ${message.failure ?? 'stopped by itself'}`,
            });
            break;
          case 'metrics':
            this.#answer(message.id, message.metrics);
            break;
          case 'closed':
            break;
          case 'peer':
            for (const other of this.#children)
              if (other !== child && (other.state === 'starting' || other.state === 'running'))
                other.handle.post({ type: 'peer', event: message.event });
            break;
        }
      });
      child.handle.onExit((code) => {
        const was = child.state;
        child.state = 'ended';
        // A child that ends before it has answered leaves nothing to wait for.
        for (const id of [...this.#pending.keys()]) this.#answer(id, []);
        if (was === 'starting')
          rejectStarted(startError(index, { message: `exited with code ${code}`, cluster: false }));
        else if (was === 'running' && !this.#closing)
          this.#resolveStopped({
            stage: this.#parts[0]!,
            failure: `${label} ${index} exited with code ${code}`,
          });
      });
      return child;
    });
  }

  /** Resolves once every child runs; rejects with the first child's start failure. */
  started(): Promise<void> {
    return this.#started;
  }

  /** Resolves when the command should end by itself: a child's part stopped, or a child ended. */
  get stopped(): Promise<ChildrenStopped> {
    return this.#stopped;
  }

  /**
   * A part is ready when it is in every child; the reasons name the child. Bytes on disk are the
   * children's sum; a standby copy's lag the largest of the children following that partition.
   */
  readiness(part: string): Readiness {
    const reasons: string[] = [];
    let ready = true;
    let stateDiskBytes: number | undefined;
    let standbyLag: Record<string, number> | undefined;
    const now = this.#now();
    for (const child of this.#children) {
      const silentMs = now - child.heardAt;
      if (child.state === 'running' && silentMs > CHILD_SILENT_MS) {
        ready = false;
        reasons.push(
          `${this.#shortLabel} ${child.index}: silent for ${Math.round(silentMs / 1000)} s (its event loop is blocked)`,
        );
        continue;
      }
      const readiness = child.readiness[part];
      if (readiness?.stateDiskBytes !== undefined)
        stateDiskBytes = (stateDiskBytes ?? 0) + readiness.stateDiskBytes;
      for (const [partition, behind] of Object.entries(readiness?.standbyLag ?? {})) {
        standbyLag ??= {};
        standbyLag[partition] = Math.max(standbyLag[partition] ?? 0, behind);
      }
      if (readiness?.ready) continue;
      ready = false;
      const why = readiness === undefined ? ['starting'] : (readiness.reasons ?? []);
      reasons.push(...why.map((reason) => `${this.#shortLabel} ${child.index}: ${reason}`));
    }
    return {
      ready,
      ...(ready ? {} : { reasons }),
      ...(stateDiskBytes === undefined ? {} : { stateDiskBytes }),
      ...(standbyLag === undefined ? {} : { standbyLag }),
    };
  }

  /** Every running child's series, as prom-client's JSON. */
  metrics(): Promise<ChildMetrics[]> {
    const running = this.#children.filter((c) => c.state === 'running');
    if (running.length === 0) return Promise.resolve([]);
    const id = ++this.#requests;
    return new Promise((resolve) => {
      const late = setTimeout(() => {
        this.#pending.delete(id);
        resolve(request.metrics);
      }, this.#metricsTimeoutMs);
      const request = {
        waiting: running.length,
        metrics: [] as ChildMetrics[],
        done: () => {
          clearTimeout(late);
          resolve(request.metrics);
        },
      };
      this.#pending.set(id, request);
      for (const child of running) child.handle.post({ type: 'metrics', id });
    });
  }

  #answer(id: number, metrics: ChildMetrics): void {
    const request = this.#pending.get(id);
    if (!request) return;
    request.metrics.push(metrics);
    if (--request.waiting > 0) return;
    this.#pending.delete(id);
    request.done();
  }

  /** Asks every child to close, and terminates one that has not ended within the timeout. */
  async close(timeoutMs = CLOSE_TIMEOUT_MS): Promise<void> {
    this.#closing = true;
    await Promise.all(
      this.#children.map(async (child) => {
        if (child.state === 'ended') return;
        const ended = new Promise<void>((resolve) => child.handle.onExit(() => resolve()));
        child.state = 'closing';
        child.handle.post({ type: 'close' });
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<'late'>((resolve) => {
          timer = setTimeout(() => resolve('late'), timeoutMs);
        });
        if ((await Promise.race([ended, late])) === 'late') await child.handle.terminate();
        clearTimeout(timer);
      }),
    );
  }
}

/** A forked child process, or a cluster worker (which wraps one), as a ChildHandle. */
export function ipcChildHandle(child: ChildProcess | Worker): ChildHandle {
  const process = 'process' in child ? child.process : child;
  const exitListeners: ((code: number) => void)[] = [];
  let exitCode: number | undefined;
  process.once('exit', (code, signal) => {
    exitCode = code ?? (signal ? 128 : 1);
    for (const listener of exitListeners) listener(exitCode);
  });
  return {
    post: (message) => {
      if (process.connected) child.send(message);
    },
    onMessage: (listener) =>
      (child as NodeJS.EventEmitter).on('message', (message: unknown) => listener(message as FromChild)),
    onExit: (listener) => {
      if (exitCode === undefined) exitListeners.push(listener);
      else listener(exitCode);
    },
    terminate: async () => {
      if (exitCode === undefined) process.kill('SIGKILL');
    },
  };
}

/** How often a child looks whether its readiness changed (what the command's /readyz shows). */
const READINESS_EVERY_MS = 200;
/** Readiness is sent again this often even when unchanged: the command takes silence for a blocked loop. */
const READINESS_REPEAT_MS = 1_000;

export interface ParentLink {
  /** Says the child runs (after its start): its readiness first, then `running`. */
  running(): void;
  /** Says the start failed, and lets go of the parent. */
  startFailed(error: ChildError): void;
  /** Says a part stopped by itself (the command ends). */
  stopped(part: string, failure?: string): void;
  /** Tells the other children (through the command). */
  toPeers(event: unknown): void;
}

/**
 * The child's side: its readiness to the command while it runs, its metrics when asked, and its close
 * when asked, or when the command is gone (SIGKILLed: rather than run on as an orphan nobody stops).
 * Ctrl-C reaches the whole process group: the command decides when to close, so the signals are ignored.
 */
export function linkToParent({
  readiness,
  metrics,
  close,
  fromPeer,
}: {
  readiness: () => Record<string, Readiness>;
  metrics: () => Promise<ChildMetrics>;
  /** Closes what the child runs; the link then says `closed` and lets go of the parent. */
  close: () => Promise<void>;
  /** What another child told its peers. */
  fromPeer?: (event: unknown) => void;
}): ParentLink {
  const post = (message: FromChild) => process.send?.(message);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => {});
  let lastReadiness = '';
  let lastSentAt = 0;
  const report = () => {
    const current = readiness();
    const text = JSON.stringify(current);
    if (text === lastReadiness && Date.now() - lastSentAt < READINESS_REPEAT_MS) return;
    lastReadiness = text;
    lastSentAt = Date.now();
    post({ type: 'readiness', readiness: current });
  };
  const timer = setInterval(report, READINESS_EVERY_MS);
  let closing: Promise<void> | undefined;
  let letGo = false;
  const closeOnce = () => {
    closing ??= close().finally(() => {
      clearInterval(timer);
      post({ type: 'closed' });
      letGo = true;
      process.disconnect?.();
    });
    return closing;
  };
  process.on('disconnect', () => {
    // After a close it asked for, the parent ends a child whose exit hangs (ChildProcesses.close). A
    // parent that went away cannot: then the exit is guarded (runtime/exit.ts).
    const parentGone = !letGo;
    void closeOnce().finally(() => (parentGone ? exitProcess(0) : process.exit(0)));
  });
  process.on('message', (message: ToChild) => {
    if (message.type === 'metrics') {
      void metrics().then((series) => post({ type: 'metrics', id: message.id, metrics: series }));
    } else if (message.type === 'close') {
      void closeOnce();
    } else if (message.type === 'peer') {
      fromPeer?.(message.event);
    }
  });
  return {
    running() {
      report();
      post({ type: 'running' });
    },
    startFailed(error) {
      clearInterval(timer);
      post({ type: 'start-failed', error });
      process.disconnect?.();
    },
    stopped(part, failure) {
      if (closing) return;
      post({ type: 'stopped', stage: part, ...(failure ? { failure } : {}) });
    },
    toPeers(event) {
      post({ type: 'peer', event });
    },
  };
}
