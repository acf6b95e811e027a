// Starts the processor stages (dedupe-router, tables, or one of them) in this process, with one
// /healthz, /readyz and /metrics server: what `hookledger process` and `hookledger start` run.
import { collectDefaultMetrics, Registry } from 'prom-client';
import type { Config } from '../runtime/config.js';
import type { Logger } from '../runtime/log.js';
import { type OpsServer, startOpsServer } from '../runtime/streams/ops-server.js';
import type { RunningStage, StageSettings } from '../runtime/streams/stage.js';
import { startDedupeRouter } from './dedupe-router/main.js';
import { startTables } from './tables/main.js';

export const STAGES: Record<string, (settings: StageSettings) => Promise<RunningStage>> = {
  'dedupe-router': startDedupeRouter,
  tables: startTables,
};

export type StageName = keyof typeof STAGES;

export interface ProcessorSettings {
  config: Config;
  logger: Logger;
  /** Which stages to run, in this order (default: all). */
  stages?: string[];
  /** Batches of different partitions processed at once. */
  concurrency?: number;
}

export interface RunningProcessors {
  ops: OpsServer;
  stages: RunningStage[];
  /** Resolves with a stage's name when it stops by itself (a fatal error): the process should end. */
  stopped: Promise<string>;
  /** Ops server first (unready), then the stages in reverse order of start. */
  close(): Promise<void>;
}

export async function startProcessors({
  config,
  logger,
  stages: names = Object.keys(STAGES),
  concurrency = 1,
}: ProcessorSettings): Promise<RunningProcessors> {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'hookledger_process_' });
  const stages: RunningStage[] = [];
  const closeStages = async () => {
    for (const stage of [...stages].reverse()) await stage.close();
  };
  try {
    for (const name of names) {
      const start = STAGES[name];
      if (!start) throw new Error(`unknown processor stage "${name}"`);
      stages.push(await start({ config, logger, registry, concurrency }));
    }
  } catch (error) {
    await closeStages();
    throw error;
  }
  const ops = await startOpsServer({
    host: config.PROCESSOR_HOST,
    port: config.PROCESSOR_PORT,
    registry,
    // Each stage's readiness names what keeps it unready (a partition and its last restore error).
    checks: Object.fromEntries(stages.map((s) => [s.name, () => s.app.readiness()])),
  });
  logger.info({ url: ops.url, stages: names }, 'processors running');
  return {
    ops,
    stages,
    stopped: Promise.race(stages.map((stage) => stage.app.stopped.then(() => stage.name))),
    async close() {
      await ops.close();
      await closeStages();
    },
  };
}
