// `hookstream process`: runs the processors (dedupe-router and tables, or one of them) with /healthz,
// /readyz and /metrics, until SIGTERM or SIGINT.
import { collectDefaultMetrics, Registry } from 'prom-client';
import { startDedupeRouter } from '../../../processors/dedupe-router/main.js';
import { startTables } from '../../../processors/tables/main.js';
import { loadConfig } from '../../../runtime/config.js';
import { createLogger } from '../../../runtime/log.js';
import { startOpsServer } from '../../../runtime/streams/ops-server.js';
import type { RunningStage, StageSettings } from '../../../runtime/streams/stage.js';
import { type Command, CommandFailed, parseOptions, UsageError } from '../command.js';

const STAGES: Record<string, (settings: StageSettings) => Promise<RunningStage>> = {
  'dedupe-router': startDedupeRouter,
  tables: startTables,
};

const HELP = `usage: hookstream process [options]

Runs the processors: dedupe-router (webhooks.raw → webhooks.unique, entity.*, webhooks.failures,
webhooks.dlq; exactly-once) and tables (entity.* → entity.<name>.latest; at-least-once, idempotent).
Serves /healthz, /readyz (every assigned partition restored) and /metrics on PROCESSOR_HOST:PROCESSOR_PORT.

options:
  --only <stage>        run one stage: dedupe-router or tables (default: both)
  --concurrency <n>     batches of different partitions processed at once (default 1)
  -h, --help            this text

environment: KAFKA_BROKERS, SCHEMA_REGISTRY_URL, TOPIC_PREFIX, DEDUPE_WINDOW, PROCESSOR_HOST,
PROCESSOR_PORT, PROCESSOR_SESSION_TIMEOUT_MS, PROCESSOR_TRANSACTION_TIMEOUT_MS, LOG_LEVEL`;

export const command: Command = {
  help: HELP,
  async run(args) {
    const { values } = parseOptions(args, { only: { type: 'string' }, concurrency: { type: 'string' } });
    const names = values.only === undefined ? Object.keys(STAGES) : [values.only];
    for (const name of names)
      if (!STAGES[name]) throw new UsageError(`--only: expected dedupe-router or tables, got ${name}`);
    const concurrency = values.concurrency === undefined ? 1 : Number(values.concurrency);
    if (!Number.isInteger(concurrency) || concurrency < 1)
      throw new UsageError('--concurrency: expected a positive integer');

    const config = loadConfig();
    const logger = createLogger({ level: config.LOG_LEVEL, name: 'process' });
    const registry = new Registry();
    collectDefaultMetrics({ register: registry, prefix: 'hookstream_process_' });
    const stages: RunningStage[] = [];
    const closeAll = async () => {
      for (const stage of stages.reverse()) await stage.close();
    };
    try {
      for (const name of names) stages.push(await STAGES[name]!({ config, logger, registry, concurrency }));
    } catch (error) {
      await closeAll();
      // A subject or topic that does not exist yet: one line saying what to do, not a stack.
      if ((error as { status?: unknown }).status === 404) {
        throw new CommandFailed(
          `a value schema is not registered (${(error as Error).message.split('\n')[0]}): run \`hookstream topics\` first`,
        );
      }
      throw error;
    }
    const ops = await startOpsServer({
      host: config.PROCESSOR_HOST,
      port: config.PROCESSOR_PORT,
      registry,
      checks: Object.fromEntries(stages.map((s) => [s.name, () => s.app.isReady()])),
    });
    logger.info({ url: ops.url, stages: names }, 'processors running');

    const outcome = await new Promise<{ signal?: NodeJS.Signals; stopped?: string }>((resolve) => {
      process.once('SIGTERM', () => resolve({ signal: 'SIGTERM' }));
      process.once('SIGINT', () => resolve({ signal: 'SIGINT' }));
      for (const stage of stages) void stage.app.stopped.then(() => resolve({ stopped: stage.name }));
    });
    logger.info(outcome, 'shutting down');
    const force = setTimeout(() => {
      logger.error('graceful shutdown took too long; exiting');
      process.exit(1);
    }, 30_000);
    force.unref();
    await ops.close();
    await closeAll();
    clearTimeout(force);
    return outcome.stopped === undefined ? 0 : 1;
  },
};
