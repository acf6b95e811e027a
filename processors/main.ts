// Starts the processor stages (dedupe-router, tables, enrich when configured, or one of them) in this process, with one
// /healthz, /readyz and /metrics server: what `hookledger process` and `hookledger start` run.
import { collectDefaultMetrics, Registry } from 'prom-client';
import { registerBuildInfo } from '../runtime/build-info.js';
import type { Config } from '../runtime/config.js';
import { assertBrokersReachable } from '../runtime/kafka/reachable.js';
import type { Logger } from '../runtime/log.js';
import { checkAll, listenFailure } from '../runtime/startup-error.js';
import {
  type MetricsSource,
  type OpsServer,
  type Readiness,
  startOpsServer,
} from '../runtime/streams/ops-server.js';
import type { RunningStage, StageSettings } from '../runtime/streams/stage.js';
import type { StreamApp } from '../runtime/streams/stream-runner.js';
import { registryAccess } from '../schemas/registry-access.js';
import { assertRegistryReachable } from '../schemas/registry-reachable.js';
import { startDedupeRouter } from './dedupe-router/main.js';
import { startEnrich } from './enrich/main.js';
import { startTables } from './tables/main.js';

export const STAGES: Record<string, (settings: StageSettings) => Promise<RunningStage>> = {
  'dedupe-router': startDedupeRouter,
  tables: startTables,
  enrich: startEnrich,
};

/** The stages a process runs unless told which: enrich only when configured (ENRICH=true). */
export function defaultStages(config: Pick<Config, 'ENRICH'>): string[] {
  return Object.keys(STAGES).filter((name) => name !== 'enrich' || config.ENRICH);
}

export type StageName = keyof typeof STAGES;

export interface ProcessorSettings {
  config: Config;
  logger: Logger;
  /** Which stages to run, in this order (default: defaultStages(config)). */
  stages?: string[];
}

export interface RunningProcessors {
  ops: OpsServer;
  stages: RunningStage[];
  /** Every stage's series (what /metrics serves), for a status line (`hookledger start`). */
  registry: Registry;
  /** Resolves with a stage's name when it stops by itself (a fatal error): the process should end. */
  stopped: Promise<string>;
  /** Ops server first (unready), then the stages in reverse order of start. */
  close(): Promise<void>;
}

export async function startProcessors({
  config,
  logger,
  stages: names = defaultStages(config),
}: ProcessorSettings): Promise<RunningProcessors> {
  await assertReachable(config);
  const registry = processRegistry();
  const stages: RunningStage[] = [];
  // Listening first: a port in use stops the start before any stage joins its group. Until every
  // stage runs, /readyz says which is still starting.
  const ops = await startProcessorOps(
    config,
    registry,
    Object.fromEntries(names.map((name) => [name, () => readinessOf(stages, name)])),
  );
  const closeStages = async () => {
    for (const stage of [...stages].reverse()) await stage.close();
  };
  try {
    for (const name of names) {
      const start = STAGES[name];
      if (!start) throw new Error(`unknown processor stage "${name}"`);
      stages.push(await start({ config, logger, registry }));
    }
  } catch (error) {
    await closeStages();
    await ops.close();
    throw error;
  }
  logger.info({ url: ops.url, stages: names }, 'processors running');
  return {
    ops,
    stages,
    registry,
    stopped: Promise.race(stages.map((stage) => stage.app.stopped.then(() => stage.name))),
    async close() {
      await ops.close();
      await closeStages();
    },
  };
}

/** The process's own series (CPU, memory, event loop, build info), under the stages' or threads' ones. */
export function processRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'hookledger_process_' });
  registerBuildInfo(registry);
  return registry;
}

/** /healthz, /readyz and /metrics on PROCESSOR_HOST:PROCESSOR_PORT; a port in use is one line naming it. */
export function startProcessorOps(
  config: Config,
  registry: MetricsSource,
  checks: Record<string, () => Readiness>,
): Promise<OpsServer> {
  return startOpsServer({ host: config.PROCESSOR_HOST, port: config.PROCESSOR_PORT, registry, checks }).catch(
    (error: unknown) => {
      throw listenFailure(error, {
        host: config.PROCESSOR_HOST,
        port: config.PROCESSOR_PORT,
        hostVariable: 'PROCESSOR_HOST',
        portVariable: 'PROCESSOR_PORT',
      });
    },
  );
}

/** Out of reach: one line now, rather than stages that retry in the background and never get ready. */
export async function assertReachable(config: Config): Promise<void> {
  await checkAll([
    assertBrokersReachable(config.KAFKA_BROKERS),
    assertRegistryReachable(registryAccess(config)),
  ]);
}

/** A stage's readiness (which partition keeps it unready, and why), or that it is still starting. */
function readinessOf(stages: readonly RunningStage[], name: string): Readiness {
  const stage = stages.find((s) => s.name === name);
  return stage === undefined ? { ready: false, reasons: ['starting'] } : stageReadiness(stage.app);
}

/** A running stage's readiness, with its bytes on disk and its standby copies' lag when it has them. */
export function stageReadiness(app: StreamApp): Readiness {
  const stateDiskBytes = app.stateDiskBytes?.();
  const standby = app.standbyLag?.();
  return {
    ...app.readiness(),
    ...(stateDiskBytes === undefined ? {} : { stateDiskBytes }),
    ...(standby === undefined
      ? {}
      : {
          standbyLag: Object.fromEntries(standby.map((l) => [`${l.topic}[${l.partition}]`, l.behind])),
        }),
  };
}
