// `hookledger ingest --workers N`: N HTTP workers (worker.ts) on one INGEST_PORT, node:cluster's way (the
// command accepts the connections and hands them round to the workers), each with its own producer.
// One Node thread answers some 10,000 webhooks a second at most (docs/benchmarks.md, "Ingest"); the
// workers use more cores. The command checks everything first, then serves /healthz, /readyz (ready when
// every worker is) and /metrics (every worker's series summed) on the ops port, and drives the drain and
// the close on SIGTERM. A worker that ends unasked ends the command: the orchestrator restarts it whole.
import cluster from 'node:cluster';
import { fileURLToPath } from 'node:url';
import { AggregatorRegistry, collectDefaultMetrics, Registry } from 'prom-client';
import {
  type ChildError,
  ChildProcesses,
  type ChildrenStopped,
  ipcChildHandle,
} from '../runtime/child-processes.js';
import type { Config } from '../runtime/config.js';
import type { Logger } from '../runtime/log.js';
import { listenFailure } from '../runtime/startup-error.js';
import { createDrain } from './drain.js';
import { checkIngestStart, listenTargets } from './main.js';
import { buildOpsApp } from './ops-app.js';
import type { Sources } from './sources.js';

/** Each worker's start, in its environment (a message would come before the worker listens for it). */
export interface IngestWorkerData {
  index: number;
  keepRefused: boolean;
}

/** The variable that carries IngestWorkerData, as JSON, to a worker. */
export const WORKER_DATA_VARIABLE = 'HOOKLEDGER_INGEST_WORKER';

/**
 * A worker's configuration: the command's, with the quarantine's bounds split between the workers. They
 * bound what this instance keeps of refused traffic (a forged flood must not fill the cluster), so N
 * workers keep no more than one would. The other bounds (pending bytes, bytes being received,
 * connections) hold per worker: they bound a process's memory (docs/configuration.md).
 */
export function workerConfig(config: Config): Config {
  const workers = config.INGEST_WORKERS;
  return {
    ...config,
    INGEST_QUARANTINE_PER_SECOND: config.INGEST_QUARANTINE_PER_SECOND / workers,
    INGEST_QUARANTINE_BYTES_PER_SECOND: config.INGEST_QUARANTINE_BYTES_PER_SECOND / workers,
    INGEST_QUARANTINE_TOTAL_PER_SECOND: config.INGEST_QUARANTINE_TOTAL_PER_SECOND / workers,
    INGEST_QUARANTINE_TOTAL_BYTES_PER_SECOND: config.INGEST_QUARANTINE_TOTAL_BYTES_PER_SECOND / workers,
  };
}

/** What each worker reports readiness for: the checks of ingest's /readyz. */
const CHECKS = ['webhooks', 'producer', 'schema'] as const;

/** A worker's start that failed: its message, and whether Kafka refused or was out of reach. */
export class IngestWorkerStartError extends Error {
  override name = 'IngestWorkerStartError';
  readonly cluster: boolean;

  constructor(worker: number, error: ChildError) {
    super(`ingest worker ${worker}: ${error.message}`);
    this.cluster = error.cluster;
  }
}

/** The command's side of N workers (runtime/child-processes.ts). */
export class IngestWorkers extends ChildProcesses {
  constructor(
    count: number,
    spawn: ConstructorParameters<typeof ChildProcesses>[2],
    options: { now?: () => number; metricsTimeoutMs?: number } = {},
  ) {
    super(count, CHECKS, spawn, {
      label: 'ingest worker',
      shortLabel: 'worker',
      startError: (index, error) => new IngestWorkerStartError(index, error),
      ...options,
    });
  }

  /** A check of /readyz: true when it is in every worker. */
  ready(check: (typeof CHECKS)[number]): boolean {
    return this.readiness(check).ready;
  }
}

export interface IngestWorkersSettings {
  config: Config;
  /** The environment the configuration was read from: each worker reads its own from it. */
  env: NodeJS.ProcessEnv;
  sources: Sources;
  logger: Logger;
}

export interface RunningIngestWorkers {
  /** http://host:port of /healthz, /readyz and /metrics. */
  opsUrl: string;
  /** Resolves when the command should end by itself: a worker ended. */
  stopped: Promise<ChildrenStopped>;
  /** /readyz fails while the workers still answer, for INGEST_DRAIN_DELAY_MS. */
  drain(): Promise<void>;
  /** Every worker closed (no new requests, in-flight ones answered, its queue flushed), then the ops port. */
  close(): Promise<void>;
}

export async function startIngestWorkers({
  config,
  env,
  sources,
  logger,
}: IngestWorkersSettings): Promise<RunningIngestWorkers> {
  const { keepRefused } = await checkIngestStart({ config, sources, logger });
  const count = config.INGEST_WORKERS;
  const own = new Registry();
  // The command's own process series, summed with the workers': the command's CPU and memory.
  collectDefaultMetrics({ register: own, prefix: 'hookledger_ingest_' });
  let workers: IngestWorkers | undefined;
  const drain = createDrain({ delayMs: config.INGEST_DRAIN_DELAY_MS, logger });
  let accepting = true;
  const ops = await buildOpsApp({
    store: {
      get ready() {
        return workers?.ready('producer') ?? false;
      },
    },
    encoder: {
      get ready() {
        return workers?.ready('schema') ?? false;
      },
    },
    metrics: {
      registry: {
        contentType: own.contentType,
        metrics: async () =>
          AggregatorRegistry.aggregate([
            await own.getMetricsAsJSON(),
            ...((await workers?.metrics()) ?? []),
          ]).metrics(),
      },
    },
    logger,
    accepting: () => accepting && (workers?.ready('webhooks') ?? false),
    draining: () => drain.draining,
  });
  let opsUrl: string;
  try {
    opsUrl = await ops.listen({ host: config.INGEST_OPS_HOST, port: config.INGEST_OPS_PORT });
  } catch (error) {
    await ops.close();
    throw listenFailure(error, listenTargets(config).opsAt);
  }

  const plainEnv = Object.fromEntries(
    Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined),
  );
  const sourcesTree = import.meta.url.endsWith('.ts');
  cluster.setupPrimary({
    exec: fileURLToPath(new URL(`./worker.${sourcesTree ? 'ts' : 'js'}`, import.meta.url)),
    // The command's Node flags (a profile, a young generation) reach the workers; a checkout runs its
    // TypeScript through tsx, as tools/cli/hookledger.js does.
    execArgv: [...process.execArgv, ...(sourcesTree ? ['--import', import.meta.resolve('tsx')] : [])],
    args: [],
  });
  let address: string | undefined;
  const running = new IngestWorkers(count, (index) => {
    const data: IngestWorkerData = { index, keepRefused };
    // The environment the configuration was read from, not only this process's.
    const worker = cluster.fork({ ...plainEnv, [WORKER_DATA_VARIABLE]: JSON.stringify(data) });
    worker.once('listening', ({ port }) => {
      address ??= `${config.INGEST_TLS_CERT_FILE ? 'https' : 'http'}://${config.INGEST_HOST}:${port}`;
    });
    return ipcChildHandle(worker);
  });
  workers = running;
  const close = async () => {
    accepting = false;
    // Within run.ts's bound on a graceful stop: a worker answers in flight and flushes within two deadlines.
    await running.close(2 * config.INGEST_DEADLINE_MS + 2_000);
    await ops.close();
    logger.info('ingest stopped');
  };
  try {
    await running.started();
  } catch (error) {
    await close();
    throw error;
  }
  logger.info({ address, ops: opsUrl, workers: count }, 'ingest listening');
  return { opsUrl, stopped: running.stopped, drain: () => drain.begin(), close };
}
