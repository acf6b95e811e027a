// `hookledger process`: runs the processors (dedupe-router and tables, or one of them) with /healthz,
// /readyz and /metrics, until SIGTERM or SIGINT.
import { defaultStages, STAGES, startProcessors } from '../../../processors/main.js';
import { StreamThreadStartError, startStreamThreads } from '../../../processors/stream-threads.js';
import { loadConfig } from '../../../runtime/config.js';
import { logStartConfig } from '../../../runtime/config-view.js';
import { exitProcess } from '../../../runtime/exit.js';
import { createLogger } from '../../../runtime/log.js';
import {
  CONNECTION_HELP,
  type Command,
  CommandFailed,
  clusterFailure,
  exitIfStillRunning,
  parseOptions,
  UsageError,
} from '../command.js';
import { STACK_ENV_HELP, withLocalStack } from '../stack-env.js';

const HELP = `usage: hookledger process [options]

Runs the processors: dedupe-router (webhooks.raw → webhooks.unique, entity.*, webhooks.failures,
webhooks.dlq; exactly-once) and tables (entity.* → entity.<name>.latest; exactly-once, idempotent).
Serves /healthz, /readyz (every assigned partition restored) and /metrics on PROCESSOR_HOST:PROCESSOR_PORT
(among them how often the platform retries and how late it delivers: docs/operating.md).
Logs JSON lines on stdout. A port in use, Kafka or the registry out of reach stops the start with one
line, within seconds, before any stage joins its group.

options:
  --only <stage>        run one stage: dedupe-router, tables or enrich (default: the first two, and
                        enrich when ENRICH=true: docs/enrich.md)
  --threads <n>         stream threads in this process (PROCESSOR_THREADS, default 1), each with its own
                        consumer, producer and tasks, instance ids <HOOKLEDGER_INSTANCE_ID>-<n>
  -h, --help            this text

environment: KAFKA_BROKERS, SCHEMA_REGISTRY_URL, TOPIC_PREFIX, DEDUPE_WINDOW, WEBHOOK_DATE_ZONE (the zone
a webhook.date without one is read in: UTC or an offset such as +01:00; unset, it is dead-lettered),
WEBHOOK_MAX_AGE / WEBHOOK_MAX_AHEAD (73h / 5m: a delivery received longer after its webhook.date, or dated
further ahead, is dead-lettered too-old / from-the-future; redrive lets it through), PROCESSOR_HOST,
PROCESSOR_PORT, PROCESSOR_SESSION_TIMEOUT_MS, PROCESSOR_TRANSACTION_TIMEOUT_MS,
PROCESSOR_COMMIT_INTERVAL_MS (25ms: a live transaction's length, so about how stale a read_committed reader is),
PROCESSOR_STATE_STORE (memory or lmdb), PROCESSOR_STATE_DIR (required with lmdb),
PROCESSOR_STANDBY_REPLICAS (0 or 1; 1 with lmdb only), SCHEMA_REGISTRY_TIMEOUT, SCHEMA_REGISTRY_AUTO_REGISTER,
ENRICH and ENRICH_* (the enrich stage: docs/configuration.md), HOOKLEDGER_INSTANCE_ID (keep it across
restarts; one per instance running at the same time), LOG_LEVEL

${CONNECTION_HELP}

${STACK_ENV_HELP}`;

export const command: Command = {
  help: HELP,
  async run(args) {
    const { values } = parseOptions(args, { only: { type: 'string' }, threads: { type: 'string' } });
    if (values.only !== undefined && !STAGES[values.only])
      throw new UsageError(`--only: expected dedupe-router, tables or enrich, got ${values.only}`);
    if (values.threads !== undefined && !/^[1-9]\d*$/.test(values.threads))
      throw new UsageError(`--threads: expected a whole number of threads from 1, got ${values.threads}`);

    const env = withLocalStack({
      ...process.env,
      ...(values.threads === undefined ? {} : { PROCESSOR_THREADS: values.threads }),
    });
    const config = loadConfig(env);
    const names = values.only === undefined ? defaultStages(config) : [values.only];
    const logger = createLogger({ level: config.LOG_LEVEL, name: 'process' });
    logStartConfig(logger, config, process.env);
    const startFailure = (error: unknown) => {
      // A subject or topic that does not exist yet: one line saying what to do, not a stack.
      if ((error as { status?: unknown }).status === 404) {
        throw new CommandFailed(
          `a value schema is not registered (${(error as Error).message.split('\n')[0]}): run \`hookledger topics\` first`,
        );
      }
      // Kafka unreachable, or refusing the credentials or the certificate: one line naming it.
      if (error instanceof StreamThreadStartError && error.cluster)
        throw new CommandFailed(`Kafka at ${config.KAFKA_BROKERS.join(',')}: ${error.message}`);
      throw clusterFailure(error, config.KAFKA_BROKERS) ?? error;
    };
    const processors =
      config.PROCESSOR_THREADS === 1
        ? await startProcessors({ config, logger, stages: names }).then(
            (running) => ({
              ...running,
              stopped: running.stopped.then((stage) => ({
                stage,
                failure: running.stages.find((s) => s.name === stage)?.app.failure()?.message,
              })),
            }),
            startFailure,
          )
        : await startStreamThreads({
            config,
            env,
            logger,
            stages: names,
            threads: config.PROCESSOR_THREADS,
          }).catch(startFailure);

    const outcome = await new Promise<{
      signal?: NodeJS.Signals;
      stopped?: { stage: string; failure?: string };
    }>((resolve) => {
      process.once('SIGTERM', () => resolve({ signal: 'SIGTERM' }));
      process.once('SIGINT', () => resolve({ signal: 'SIGINT' }));
      void processors.stopped.then((stopped) => resolve({ stopped }));
    });
    logger.info(outcome, 'shutting down');
    const force = setTimeout(() => {
      logger.error('graceful shutdown took too long; exiting');
      exitProcess(1);
    }, 30_000);
    force.unref();
    await processors.close();
    clearTimeout(force);
    exitIfStillRunning((message) => logger.warn(message));
    if (outcome.stopped === undefined) return 0;
    // Stopped by itself (a fatal error): one line on stderr naming the stage and why, exit 1.
    throw new CommandFailed(stoppedLine(outcome.stopped.stage, outcome.stopped.failure));
  },
};

/** `<stage> stopped: <reason>`, on one line whatever the error's message holds. */
export function stoppedLine(stage: string, failure: string | undefined): string {
  const reason = failure === undefined ? 'stopped by itself' : failure.replace(/\s*\n\s*/g, ' ').trim();
  return `the ${stage} stage stopped: ${reason}`;
}
