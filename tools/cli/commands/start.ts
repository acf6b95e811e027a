// `hookledger start`: everything for local use in one process — the stack (unless one is configured or
// already up), topics and schemas, ingest and both processor stages — until Ctrl-C stops all it started.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startIngest } from '../../../ingest/main.js';
import { loadSources, type Sources } from '../../../ingest/sources.js';
import { startProcessors } from '../../../processors/main.js';
import { loadConfig } from '../../../runtime/config.js';
import { createLogger } from '../../../runtime/log.js';
import { defaultStateDir, runningStack, type Stack, startStack } from '../../stack/index.js';
import { type Command, clusterFailure, exitIfStillRunning, parseOptions } from '../command.js';
import { setUpTopics } from './topics.js';

const HELP = [
  'usage: hookledger start [--state-dir <dir>] [--port <port>] [--partitions <n>]',
  '',
  'Runs hookledger for local use: a Kafka broker and schema registry (unless KAFKA_BROKERS and',
  'SCHEMA_REGISTRY_URL are set, or `hookledger stack up` already runs one), the topics and schemas,',
  'ingest and both processor stages (dedupe-router, tables). Prints the webhook URL, the key and a',
  'command that sends signed deliveries.',
  'Ctrl-C stops everything it started; the data stays in the state directory for the next start.',
  '',
  'options:',
  '  --state-dir <dir>   where the local stack and the development source live (default .hookledger;',
  '                      the stack itself honours HOOKLEDGER_STATE_DIR like `hookledger stack`)',
  '  --port <port>       ingest port (default INGEST_PORT, else 8080)',
  '  --partitions <n>    partitions of new topics (default TOPIC_PARTITIONS, else 4 for a local stack)',
  '',
  'Sources come from HOOKLEDGER_SOURCES or HOOKLEDGER_SOURCES_FILE; when neither is set, a source',
  'named "local" with a random key is created once in <state-dir>/sources.json.',
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
): Promise<{ brokers: string[]; registryUrl: string; owned?: Stack; local: boolean; where: string }> {
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

function firstSignedSource(sources: Sources): { name: string; keyId: string; key: string } | undefined {
  for (const [name, source] of sources) {
    const [keyId, key] = source.keys.entries().next().value ?? [];
    if (keyId !== undefined && key !== undefined) return { name, keyId, key: key.toString('utf8') };
  }
  return undefined;
}

export const command: Command = {
  help: HELP,
  async run(args) {
    const { values } = parseOptions(args, {
      'state-dir': { type: 'string' },
      port: { type: 'string' },
      partitions: { type: 'string' },
    });
    // `hookledger stack up` and `start` share the stack directory, so start reuses a stack already up.
    const stateDir = path.resolve(values['state-dir'] ?? '.hookledger');
    const stackDir = values['state-dir'] ? path.join(stateDir, 'stack') : defaultStateDir();
    const stack = await obtainStack(stackDir, process.env);
    const stopStack = async () => {
      if (stack.owned) await stack.owned.stop();
    };

    let closedCleanly = false;
    try {
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        KAFKA_BROKERS: stack.brokers.join(','),
        SCHEMA_REGISTRY_URL: stack.registryUrl,
        HOOKLEDGER_LOCAL_STACK: String(stack.local),
        ...(values.port ? { INGEST_PORT: values.port } : {}),
        ...(values.partitions ? { TOPIC_PARTITIONS: values.partitions } : {}),
      };
      if (!env.HOOKLEDGER_SOURCES && !env.HOOKLEDGER_SOURCES_FILE) {
        env.HOOKLEDGER_SOURCES_FILE = developmentSourcesFile(stateDir);
      }
      if (stack.local && !env.TOPIC_PARTITIONS) env.TOPIC_PARTITIONS = String(LOCAL_PARTITIONS);
      const config = loadConfig(env);
      const sources = loadSources(env);
      const logger = createLogger({ level: config.LOG_LEVEL, name: 'hookledger' });

      const topics = await setUpTopics({
        config,
        logger,
        local: stack.local,
        warn: (message) => logger.warn(message),
      });
      const ingest = await startIngest({ config, sources, logger });
      const processors = await startProcessors({ config, logger }).catch(async (error: unknown) => {
        await ingest.close();
        throw error;
      });

      const signed = firstSignedSource(sources);
      const host = config.INGEST_HOST === '0.0.0.0' ? '127.0.0.1' : config.INGEST_HOST;
      const base = `${ingest.url.startsWith('https') ? 'https' : 'http'}://${host}:${config.INGEST_PORT}`;
      const ops = processors.ops.url.replace('//0.0.0.0:', '//127.0.0.1:');
      console.log(
        [
          '',
          'hookledger is running',
          `  stack:     ${stack.where}`,
          `  topics:    ${topics.topics.length} ready (${topics.partitions} partitions, prefix "${config.TOPIC_PREFIX}")`,
          ...[...sources.keys()].map((name) => `  webhooks:  POST ${base}/webhooks/${name}`),
          ...(signed
            ? [
                `  key:       "${signed.keyId}" of source "${signed.name}" (from ${env.HOOKLEDGER_SOURCES_FILE ?? 'HOOKLEDGER_SOURCES'})`,
                '  try:',
                `    npx hookledger simulate --url ${base}/webhooks/${signed.name} --key ${signed.key} --count 100`,
              ]
            : []),
          `  ingest:    ${base}/readyz   ${base}/metrics`,
          `  processors: ${processors.stages.map((stage) => stage.name).join(' and ')}: ${ops}/readyz   ${ops}/metrics`,
          '  see what arrives:  npx hookledger tail entity.energy-switch --from-beginning   (or any topic)',
          '',
          'Ctrl-C stops everything this command started.',
        ].join('\n'),
      );

      const reason = await new Promise<string>((resolve) => {
        process.once('SIGINT', () => resolve('SIGINT'));
        process.once('SIGTERM', () => resolve('SIGTERM'));
        void processors.stopped.then((stage) => resolve(`the ${stage} stage stopped`));
      });
      console.log(`\n${reason}: stopping…`);
      // Ingest first (no new deliveries), then the processors finish their transactions.
      await ingest.close();
      await processors.close();
      closedCleanly = true;
      return reason.startsWith('SIG') ? 0 : 1;
    } catch (error) {
      throw clusterFailure(error, stack.brokers) ?? error;
    } finally {
      await stopStack();
      if (closedCleanly) exitIfStillRunning((message) => console.error(`hookledger: ${message}`));
    }
  },
};
