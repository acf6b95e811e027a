// `hookledger start`: everything for local use in one process — the stack (unless one is configured or
// already up), topics and schemas, the processors and ingest — until Ctrl-C stops all it started. It is
// for people: a short block, then one status line; the services' JSON logs go to a file.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Registry } from 'prom-client';
import { startIngest } from '../../../ingest/main.js';
import { loadSources, sourcesSettings } from '../../../ingest/sources.js';
import { startProcessors } from '../../../processors/main.js';
import { loadConfig } from '../../../runtime/config.js';
import { logStartConfig } from '../../../runtime/config-view.js';
import { assertBrokersReachable } from '../../../runtime/kafka/reachable.js';
import { assertPortFree, checkAll, type ListenTarget } from '../../../runtime/startup-error.js';
import { registryAccess } from '../../../schemas/registry-access.js';
import { assertRegistryReachable } from '../../../schemas/registry-reachable.js';
import { DEFAULT_API_PORT } from '../../simulate/graphql-api.js';
import { defaultStateDir, runningStack, type Stack, startStack } from '../../stack/index.js';
import {
  type Command,
  CommandFailed,
  clusterFailure,
  exitIfStillRunning,
  parseOptions,
  UsageError,
} from '../command.js';
import { bannerLines, type DevelopmentKey } from '../start/banner.js';
import { openStartLog } from '../start/log-file.js';
import { settingsStartIgnores } from '../start/one-of-each.js';
import { assertDistinctPorts } from '../start/ports.js';
import { readStatus, statusLine } from '../start/status.js';
import { StatusDisplay } from '../start/status-display.js';
import { stoppedLine } from './process.js';
import { setUpFailure, setUpTopics } from './topics.js';

const HELP = [
  'usage: hookledger start [--state-dir <dir>] [--port <port>] [--partitions <n>]',
  '',
  'Runs hookledger for local use: a Kafka broker and schema registry (unless KAFKA_BROKERS and',
  'SCHEMA_REGISTRY_URL are set, or `hookledger stack up` already runs one), the topics and schemas,',
  'the processor stages (dedupe-router, tables, and enrich allowed to fetch from the GraphQL API that',
  '`simulate --minimal-rate` serves on 127.0.0.1:8089, unless ENRICH is set) and ingest.',
  '',
  'Once all runs it prints a short block (the webhook URL, the key, a `simulate` command that sends',
  'signed deliveries, where the logs are), then one status line: received, stored, routed, duplicates,',
  'dead-lettered and lag, redrawn in place on a terminal (elsewhere a plain line when it changed, at',
  "most every 10 s). The services' JSON logs go to <state-dir>/logs/hookledger.log (the previous run's",
  'to hookledger.log.1); warnings and errors also show as one short line.',
  'A port in use, a broker or registry out of reach or a bad variable stops it with one line, and',
  'nothing it started stays running. Ctrl-C stops everything it started; the data stays in the state',
  'directory for the next start.',
  '',
  'options:',
  '  --state-dir <dir>   where the local stack, the logs and the development source live (default',
  '                      .hookledger; the stack itself honours HOOKLEDGER_STATE_DIR like `hookledger stack`)',
  '  --port <port>       ingest port (default INGEST_PORT, else 8080); the processors use PROCESSOR_PORT',
  '  --partitions <n>    partitions of new topics (default TOPIC_PARTITIONS, else 4 for a local stack)',
  '',
  'Sources come from HOOKLEDGER_SOURCES or HOOKLEDGER_SOURCES_FILE, and their keys are never printed;',
  'when neither is set, a source named "local" with a random key is created once in',
  '<state-dir>/sources.json, and start prints that key.',
].join('\n');

/** Partitions of a local stack's topics: enough to exercise partitioning, few enough for a laptop. */
const LOCAL_PARTITIONS = 4;

const DEV_SOURCE = 'local';
const DEV_KEY_ID = 'dev';

/** The development source, created once so its key stays the same across starts. */
function developmentSourcesFile(stateDir: string): string {
  const file = path.join(stateDir, 'sources.json');
  if (!existsSync(file)) {
    mkdirSync(stateDir, { recursive: true });
    const sources = { [DEV_SOURCE]: { keys: { [DEV_KEY_ID]: randomBytes(20).toString('hex') } } };
    writeFileSync(file, `${JSON.stringify(sources, null, 2)}\n`, { mode: 0o600 });
  }
  return file;
}

/** Which stack to use: configured, one already up in the state dir, or one this process starts and owns. */
async function obtainStack(
  stackDir: string,
  env: NodeJS.ProcessEnv,
): Promise<{
  brokers: string[];
  registryUrl: string;
  /** A secured stack's login variables (`stack up --secure`). */
  clientEnv?: Record<string, string>;
  owned?: Stack;
  local: boolean;
  where: string;
}> {
  if (env.KAFKA_BROKERS && env.SCHEMA_REGISTRY_URL) {
    return {
      brokers: env.KAFKA_BROKERS.split(','),
      registryUrl: env.SCHEMA_REGISTRY_URL,
      local: env.HOOKLEDGER_LOCAL_STACK === 'true',
      where: 'configured by KAFKA_BROKERS and SCHEMA_REGISTRY_URL',
    };
  }
  const background = runningStack(stackDir);
  if (background) {
    return {
      brokers: background.brokers,
      registryUrl: background.registryUrl,
      ...(background.clientEnv ? { clientEnv: background.clientEnv } : {}),
      local: true,
      where: `the stack already running from ${stackDir}`,
    };
  }
  console.log('starting a local Kafka broker and schema registry (the first run downloads them)…');
  const stack = await startStack({ stateDir: stackDir, env });
  return {
    brokers: stack.brokers,
    registryUrl: stack.registryUrl,
    owned: stack,
    local: true,
    where: `${stack.describe()}, ready in ${(stack.startupMs / 1000).toFixed(1)} s`,
  };
}

/**
 * The variables as start will run with them, for checking before the stack exists: its brokers and
 * registry are not known yet, so stand-ins take their place unless both are configured.
 */
function beforeTheStack(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  if (env.KAFKA_BROKERS && env.SCHEMA_REGISTRY_URL) return env;
  return { ...env, KAFKA_BROKERS: '127.0.0.1:9092', SCHEMA_REGISTRY_URL: 'http://127.0.0.1:8081' };
}

/** A path as a person would type it from here. */
function shown(file: string): string {
  const relative = path.relative(process.cwd(), file);
  return relative.startsWith('..') || path.isAbsolute(relative) ? file : relative;
}

export const command: Command = {
  help: HELP,
  async run(args) {
    const { values } = parseOptions(args, {
      'state-dir': { type: 'string' },
      port: { type: 'string' },
      partitions: { type: 'string' },
    });
    // The options are checked as options, before anything is written (the development source's file):
    // through loadConfig, a bad one would be blamed on its variable.
    for (const [option, value] of [
      ['--port', values.port],
      ['--partitions', values.partitions],
    ] as const)
      if (value !== undefined && !/^[1-9]\d{0,5}$/.test(value))
        throw new UsageError(`${option}: expected a positive integer, got "${value}"`);
    if (values.port !== undefined && Number(values.port) > 65_535)
      throw new UsageError(`--port: expected a port from 1 to 65535, got ${values.port}`);
    // `hookledger stack up` and `start` share the stack directory, so start reuses a stack already up.
    const stateDir = path.resolve(values['state-dir'] ?? '.hookledger');
    const stackDir = values['state-dir'] ? path.join(stateDir, 'stack') : defaultStateDir();

    // What a person can get wrong is said now, not after the stack's half a minute.
    const userSources = sourcesSettings(process.env);
    const ownSources = !userSources.inline && !userSources.file;
    const baseEnv: NodeJS.ProcessEnv = {
      ...process.env,
      ...(values.port ? { INGEST_PORT: values.port } : {}),
      ...(values.partitions ? { TOPIC_PARTITIONS: values.partitions } : {}),
      ...(ownSources ? { HOOKLEDGER_SOURCES_FILE: developmentSourcesFile(stateDir) } : {}),
      // The enrich stage, allowed to fetch from the simulator's own GraphQL API only (`simulate
      // --minimal-rate`); unless ENRICH says otherwise.
      ...(process.env.ENRICH === undefined
        ? { ENRICH: 'true', ENRICH_ALLOWED_ENDPOINTS: `http://127.0.0.1:${DEFAULT_API_PORT}` }
        : {}),
    };
    const early = loadConfig(beforeTheStack(baseEnv));
    const sources = loadSources(baseEnv);
    const ingestAt: ListenTarget = {
      host: early.INGEST_HOST,
      port: early.INGEST_PORT,
      hostVariable: 'INGEST_HOST',
      portVariable: values.port ? '--port' : 'INGEST_PORT',
    };
    const processorsAt: ListenTarget = {
      host: early.PROCESSOR_HOST,
      port: early.PROCESSOR_PORT,
      hostVariable: 'PROCESSOR_HOST',
      portVariable: 'PROCESSOR_PORT',
    };
    const ingestOpsAt: ListenTarget = {
      host: early.INGEST_OPS_HOST,
      port: early.INGEST_OPS_PORT,
      hostVariable: 'INGEST_OPS_HOST',
      portVariable: 'INGEST_OPS_PORT',
    };
    assertDistinctPorts(ingestAt, processorsAt);
    assertDistinctPorts(ingestOpsAt, processorsAt);
    assertDistinctPorts(ingestAt, ingestOpsAt);
    await assertPortFree(ingestAt);
    await assertPortFree(ingestOpsAt);
    await assertPortFree(processorsAt);

    const registries: Registry[] = [];
    const display = new StatusDisplay({
      out: process.stdout,
      read: async () => statusLine(await readStatus(registries)),
    });
    // Warnings and errors show as short lines while it runs; a failed start's reason is main.ts's one line.
    let noticing = true;
    const log = openStartLog({
      file: path.join(stateDir, 'logs', 'hookledger.log'),
      level: early.LOG_LEVEL,
      notify: (line) => {
        if (noticing) display.note(line);
      },
    });
    const logger = log.logger;

    const stack = await obtainStack(stackDir, process.env);
    /** What this run started, closed in reverse order whatever happens. */
    const started: Array<() => Promise<void>> = [];
    const closeStarted = async () => {
      for (const close of started.splice(0).reverse()) await close();
    };
    try {
      const env: NodeJS.ProcessEnv = {
        ...baseEnv,
        ...stack.clientEnv,
        KAFKA_BROKERS: stack.brokers.join(','),
        SCHEMA_REGISTRY_URL: stack.registryUrl,
        HOOKLEDGER_LOCAL_STACK: String(stack.local),
      };
      const config = loadConfig(env);
      logStartConfig(logger, config, env);
      const ignored = settingsStartIgnores(config);
      if (ignored !== undefined) logger.warn(ignored);
      await checkAll([
        assertBrokersReachable(config.KAFKA_BROKERS),
        assertRegistryReachable(registryAccess(config)),
      ]);
      const topics = await setUpTopics({
        config,
        logger,
        local: stack.local,
        // Topics that exist keep their count; new ones on a local stack get few.
        ...(stack.local ? { newPartitions: LOCAL_PARTITIONS } : {}),
        // A raw topic on one broker is what a local stack is: worth a line in the log, not on the screen.
        warn: (message) => (stack.local ? logger.info(message) : logger.warn(message)),
      });
      // The processors first, so the pipeline behind ingest is there when its door opens.
      const processors = await startProcessors({ config, logger });
      started.push(() => processors.close());
      registries.push(processors.registry);
      const ingest = await startIngest({ config, sources, logger });
      started.push(() => ingest.close());
      registries.push(ingest.metrics.registry);

      const host = (h: string) => (h === '0.0.0.0' || h === '::' ? '127.0.0.1' : h);
      const scheme = ingest.url.startsWith('https') ? 'https' : 'http';
      const development: DevelopmentKey | undefined = ownSources
        ? developmentKey(sources, shown(env.HOOKLEDGER_SOURCES_FILE!))
        : undefined;
      console.log(
        bannerLines({
          stack: stack.where,
          topics: topics.topics.length,
          stages: processors.stages.map((stage) => stage.name),
          ingestBase: `${scheme}://${host(config.INGEST_HOST)}:${new URL(ingest.url).port}`,
          ingestOpsBase: ingest.opsUrl.replace('//0.0.0.0:', '//127.0.0.1:'),
          processorsBase: processors.ops.url.replace('//0.0.0.0:', '//127.0.0.1:'),
          sources: [...sources.values()].map((s) => ({ name: s.name, signed: s.signature === 'required' })),
          ...(development ? { development } : {}),
          ...(ownSources
            ? {}
            : {
                sourcesFrom: userSources.file
                  ? `${userSources.file.variable} ${userSources.file.value}`
                  : userSources.inline!.variable,
              }),
          logFile: shown(log.file),
        }).join('\n'),
      );
      await display.start();

      const outcome = await new Promise<{ signal?: string; stopped?: string }>((resolve) => {
        process.once('SIGINT', () => resolve({ signal: 'SIGINT' }));
        process.once('SIGTERM', () => resolve({ signal: 'SIGTERM' }));
        void processors.stopped.then((stage) => resolve({ stopped: stage }));
      });
      await display.stop();
      console.log(`${outcome.signal ?? 'a stage stopped'}: stopping…`);
      logger.info(outcome, 'shutting down');
      // Ingest first (no new deliveries), then the processors finish their transactions.
      await closeStarted();
      if (outcome.stopped !== undefined)
        throw new CommandFailed(
          stoppedLine(
            outcome.stopped,
            processors.stages.find((stage) => stage.name === outcome.stopped)?.app.failure()?.message,
          ),
        );
      console.log('stopped; the data stays for the next start');
      return 0;
    } catch (error) {
      if (error instanceof CommandFailed) throw error;
      noticing = false;
      logger.error({ err: error }, 'start failed');
      throw setUpFailure(error) ?? clusterFailure(error, stack.brokers) ?? error;
    } finally {
      // A failed start closes what it started before the one line is printed: nothing stays running.
      await closeStarted().catch(() => undefined);
      await stack.owned?.stop();
      // A client library's leftover handle must not keep a finished (or failed) start alive.
      exitIfStillRunning((message) => console.error(`hookledger: ${message}`));
    }
  },
};

/** The development source's key, as the banner shows it. */
function developmentKey(sources: ReturnType<typeof loadSources>, file: string): DevelopmentKey | undefined {
  const source = sources.get(DEV_SOURCE);
  const [keyId, key] = source?.keys.entries().next().value ?? [];
  if (keyId === undefined || key === undefined) return undefined;
  return { source: DEV_SOURCE, keyId, key: key.toString('utf8'), file };
}
