// `hookledger stack`: a local Kafka broker and schema registry for development, tests and CI.
import { type Logger, pino } from 'pino';
import {
  actOnKafkaIn,
  actOnRegistryIn,
  DEFAULT_KAFKA_VERSION,
  defaultStateDir,
  ensureArtifacts,
  KAFKA_RELEASES,
  KAFKA_TOOLS,
  kafkaRelease,
  MAX_LOCAL_BROKERS,
  readStackRecord,
  renderStackEnv,
  requireJava,
  requireKafkaRelease,
  runKafkaTool,
  StackError,
  type StackStatus,
  stackFiles,
  stackStatus,
  startStack,
  stopStackIn,
} from '../../stack/index.js';
import { type Command, CommandFailed, parseOptions, UsageError } from '../command.js';

const VERSIONS = KAFKA_RELEASES.map((release) => release.version).join(', ');

const VERSION_HELP = `HOOKLEDGER_KAFKA_VERSION picks the broker: ${VERSIONS} (default ${DEFAULT_KAFKA_VERSION}; \`4.1\` means the 4.1.x listed).`;

const STATE_DIR_HELP =
  '  --state-dir <dir>   where config, data, pids and logs live (default: $HOOKLEDGER_STATE_DIR or ./.hookledger/stack)';

/** What `stack restart|kill|freeze|thaw` acts on: Kafka (every node, or node n), or the registry. */
export type StackTarget = { component: 'kafka'; node?: number } | { component: 'registry' };

export type TargetSubcommand = 'restart' | 'kill' | 'freeze' | 'thaw';

const TARGET_USAGE: Record<TargetSubcommand, string> = {
  restart: 'usage: hookledger stack restart kafka [<n>] | registry [--state-dir <dir>]',
  kill: 'usage: hookledger stack kill kafka <n> | registry [--state-dir <dir>]',
  freeze: 'usage: hookledger stack freeze registry [--state-dir <dir>]',
  thaw: 'usage: hookledger stack thaw registry [--state-dir <dir>]',
};

const HELP: Record<string, string> = {
  up: [
    'usage: hookledger stack up [--state-dir <dir>] [--brokers <n>] [--secure]',
    '',
    'Starts Kafka and the schema registry in the background and prints the variables that point at them',
    '(also written to <state-dir>/stack.env). Data is kept between `up`s. Where they come from, in order:',
    'KAFKA_BROKERS + SCHEMA_REGISTRY_URL if set (nothing to start); Docker if an engine answers and',
    'HOOKLEDGER_STACK is not `local`; else local JVMs (Java 17+, artifacts from Maven Central, cached in',
    '$HOOKLEDGER_CACHE_DIR or ~/.cache/hookledger).',
    VERSION_HELP,
    '',
    STATE_DIR_HELP,
    '  --secure            local JVMs, one broker: clients reach Kafka over SASL_SSL (SCRAM-SHA-512, a',
    '                      certificate from a CA made at first start, in <state-dir>/secure/) and the registry',
    '                      over HTTPS only (same CA) with HTTP basic auth; the printed variables include',
    '                      KAFKA_SECURITY_PROTOCOL, KAFKA_SASL_*, KAFKA_SSL_CA_FILE, an https SCHEMA_REGISTRY_URL',
    '                      and SCHEMA_REGISTRY_USERNAME/_PASSWORD/_CA_FILE. Needs openssl.',
    "                      The listener also takes OAUTHBEARER tokens from the stack's own OAuth token endpoint",
    '                      (client credentials): <state-dir>/stack-oauth.env holds the variables for that.',
    '  --brokers <n>       local JVMs: a KRaft cluster of n nodes (each a broker and a controller; 3 is the',
    '                      one to test losing a broker): internal and new topics get 3 replicas with',
    '                      min.insync.replicas 2, so `hookledger topics` passes its production checks.',
    '                      `stack kill kafka <n>` and `stack restart kafka <n>` act on one node.',
    '                      A state dir keeps the broker count it was first started with (the default',
    '                      for later `up`s).',
  ].join('\n'),
  down: [
    'usage: hookledger stack down [--state-dir <dir>] [--purge]',
    '',
    'Stops the stack `up` started: the registry, then Kafka (SIGTERM, then SIGKILL after 15 s).',
    '',
    STATE_DIR_HELP,
    '  --purge             also delete the state directory (topics, schemas, logs)',
  ].join('\n'),
  status: [
    'usage: hookledger stack status [--state-dir <dir>] [--json]',
    '',
    'Says what runs where: pids alive, ports answering, log files. Exit status 0 only if all answer.',
    '',
    STATE_DIR_HELP,
    '  --json              one JSON object: {running, stateDir, kind, kafkaVersion, brokers, registryUrl,',
    '                      startedAt, healthy, components: [{name, address, pid, answers, logFile}]}',
  ].join('\n'),
  restart: [
    TARGET_USAGE.restart,
    '',
    'kafka: stops the brokers (or only node n of a cluster) and starts them again on the same ports with the',
    'same data (the registry stays up), in the Kafka version the stack was started with. Also starts a node',
    'that `stack kill` stopped.',
    'registry: stops the schema registry (waking it if frozen) and starts it again on the same port (Kafka',
    'stays up); it answers once it has read its schemas back from Kafka, where they are stored. Also starts',
    'a registry that `stack kill registry` stopped. The secured stack is restarted whole (`down`, then',
    '`up --secure`): neither restart nor kill acts on its registry.',
    '',
    STATE_DIR_HELP,
  ].join('\n'),
  kill: [
    TARGET_USAGE.kill,
    '',
    'SIGKILLs Kafka node n, or the schema registry, as a crashed machine would stop: no clean shutdown, no',
    'leadership handed over. On a cluster (`stack up --brokers 3`) the other brokers keep serving. A killed',
    'registry refuses connections; its schemas stay in Kafka. `stack restart kafka <n>` or',
    '`stack restart registry` brings it back.',
    '',
    STATE_DIR_HELP,
  ].join('\n'),
  freeze: [
    TARGET_USAGE.freeze,
    '',
    'SIGSTOPs the schema registry: its port still accepts connections and no request is ever answered, as',
    'a registry stuck in a long pause or behind a network that drops its replies. `stack status` shows it',
    'frozen; `stack thaw registry` wakes it (SIGCONT), `stack down` and `stack restart registry` too.',
    '',
    STATE_DIR_HELP,
  ].join('\n'),
  thaw: [
    TARGET_USAGE.thaw,
    '',
    'SIGCONTs a schema registry `stack freeze registry` stopped: it answers again, requests that waited',
    'meanwhile included.',
    '',
    STATE_DIR_HELP,
  ].join('\n'),
  fetch: [
    'usage: hookledger stack fetch',
    '',
    'Downloads Kafka and Apicurio Registry from Maven Central through Maven and caches them',
    '($HOOKLEDGER_CACHE_DIR or ~/.cache/hookledger), once per Kafka version; nothing runs. Prints the',
    `cached paths. ${VERSION_HELP}`,
  ].join('\n'),
  'kafka-tool': [
    'usage: hookledger stack kafka-tool <tool> [args…]',
    '',
    "Runs one of Kafka's CLI tools from the cached jars. Without --bootstrap-server it gets the running",
    "stack's brokers ($KAFKA_BROKERS, else ./.hookledger/stack or $HOOKLEDGER_STATE_DIR). The jars are",
    "HOOKLEDGER_KAFKA_VERSION's if set, else the running stack's version, else the default.",
    '',
    `tools: ${Object.keys(KAFKA_TOOLS).join(', ')}`,
    'example: hookledger stack kafka-tool console-consumer --topic webhooks.raw --from-beginning',
    '         --isolation-level read_committed --property print.key=true',
  ].join('\n'),
};

const help = [
  'usage: hookledger stack <subcommand> [options]',
  '',
  `A local Kafka (${DEFAULT_KAFKA_VERSION} by default, KRaft, one node) and Apicurio schema registry (Confluent`,
  'API, schemas stored in that Kafka) for development and tests.',
  VERSION_HELP,
  '',
  'subcommands:',
  '  up                       start in the background; prints KAFKA_BROKERS=… and SCHEMA_REGISTRY_URL=…',
  '  down [--purge]           stop it (data stays unless --purge)',
  '  status                   what runs where',
  '  restart kafka [<n>]      stop and start the brokers (or node n) on the same ports and data',
  '  restart registry         stop and start the registry on the same port (its schemas are in Kafka)',
  '  kill kafka <n>           SIGKILL Kafka node n, as a crash (restart kafka <n> starts it again)',
  '  kill registry            SIGKILL the registry: connections refused (restart registry starts it)',
  '  freeze registry          SIGSTOP the registry: connections accepted, nothing answered',
  '  thaw registry            SIGCONT a frozen registry',
  '  fetch                    download and cache the JVM artifacts only (CI)',
  '  kafka-tool <tool> [...]  run a Kafka CLI tool (topics, console-consumer, consumer-groups, …)',
  '',
  'Run `hookledger stack <subcommand> --help` for its options.',
].join('\n');

/** Progress and warnings on stderr, so that stdout of `stack up` is only the variables. */
function stderrLogger(): Logger {
  return pino(
    { level: process.env.LOG_LEVEL ?? 'warn', base: { name: 'hookledger-stack' } },
    pino.destination(2),
  );
}

function resolveStateDir(option: string | undefined): string {
  return defaultStateDir({
    ...process.env,
    HOOKLEDGER_STATE_DIR: option ?? process.env.HOOKLEDGER_STATE_DIR,
  });
}

function stateDirOption(args: string[]) {
  const { values, positionals } = parseOptions(args, { 'state-dir': { type: 'string' } }, true);
  return { stateDir: resolveStateDir(values['state-dir']), positionals };
}

function noPositionals(subcommand: string, positionals: string[]): void {
  if (positionals.length > 0)
    throw new UsageError(`stack ${subcommand}: unexpected argument "${positionals[0]}"`);
}

async function up(args: string[]): Promise<number> {
  const { values, positionals } = parseOptions(
    args,
    { 'state-dir': { type: 'string' }, secure: { type: 'boolean' }, brokers: { type: 'string' } },
    true,
  );
  const stateDir = resolveStateDir(values['state-dir']);
  noPositionals('up', positionals);
  const brokers = values.brokers === undefined ? undefined : Number(values.brokers);
  if (brokers !== undefined && !(Number.isInteger(brokers) && brokers >= 1 && brokers <= MAX_LOCAL_BROKERS)) {
    throw new UsageError(
      `--brokers: expected a whole number from 1 to ${MAX_LOCAL_BROKERS}, got ${values.brokers}`,
    );
  }
  const already = await stackStatus(stateDir);
  if (already?.healthy) {
    console.error(`hookledger: a stack already runs from ${stateDir}`);
    process.stdout.write(renderStackEnv(already.record));
    return 0;
  }
  // The JVMs are detached, so a Ctrl-C here would orphan a half-started stack: stop what started.
  const interrupted = async () => {
    await stopStackIn(stateDir).catch(() => {});
    process.exit(130);
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  try {
    console.error(`hookledger: starting the stack (state: ${stateDir}) …`);
    const stack = await startStack({
      stateDir,
      detached: true,
      logger: stderrLogger(),
      ...(values.secure ? { secure: true } : {}),
      ...(brokers === undefined ? {} : { brokers }),
    });
    if (stack.kind === 'configured') {
      console.error('hookledger: KAFKA_BROKERS and SCHEMA_REGISTRY_URL are set: nothing to start');
    } else {
      console.error(`hookledger: ${stack.describe()}; ready in ${(stack.startupMs / 1000).toFixed(1)} s`);
      console.error(
        `hookledger: variables in ${stackFiles(stateDir).env}; stop with \`hookledger stack down\``,
      );
      if (stack.oauthClientEnv)
        console.error(
          `hookledger: to log in to Kafka with OAUTHBEARER instead of SCRAM, use ${stackFiles(stateDir).oauthEnv}`,
        );
    }
    process.stdout.write(renderStackEnv(stack));
    return 0;
  } finally {
    process.off('SIGINT', interrupted);
    process.off('SIGTERM', interrupted);
  }
}

async function down(args: string[]): Promise<number> {
  const { values, positionals } = parseOptions(
    args,
    { 'state-dir': { type: 'string' }, purge: { type: 'boolean' } },
    true,
  );
  noPositionals('down', positionals);
  const stateDir = resolveStateDir(values['state-dir']);
  const stopped = await stopStackIn(stateDir, { purge: values.purge === true });
  console.error(
    stopped ? `hookledger: stack stopped (${stateDir})` : `hookledger: no stack was running from ${stateDir}`,
  );
  return 0;
}

async function status(args: string[]): Promise<number> {
  const { values, positionals } = parseOptions(
    args,
    { 'state-dir': { type: 'string' }, json: { type: 'boolean', default: false } },
    true,
  );
  const stateDir = resolveStateDir(values['state-dir']);
  noPositionals('status', positionals);
  const current = await stackStatus(stateDir);
  if (values.json) {
    console.log(JSON.stringify(statusJson(stateDir, current)));
    return current?.healthy ? 0 : 1;
  }
  if (!current) {
    console.log(`no stack from ${stateDir} (start one with \`hookledger stack up\`)`);
    return 1;
  }
  const { record } = current;
  console.log(
    `${record.kind} stack (Kafka ${record.kafkaVersion ?? DEFAULT_KAFKA_VERSION})${record.detached ? '' : ` owned by process ${record.ownerPid}`}, started ${record.startedAt}, state ${stateDir}`,
  );
  const nameWidth = Math.max(...current.components.map((c) => c.name.length));
  for (const c of current.components) {
    const pid =
      record.kind === 'local'
        ? c.pid !== undefined
          ? `pid ${c.pid} ${c.frozen ? 'frozen (SIGSTOP)' : 'alive'}`
          : 'no live pid'
        : '';
    const parts = [
      c.name.padEnd(nameWidth),
      c.address,
      pid,
      c.answers ? 'answers' : 'NOT answering',
      c.logFile ? `log ${c.logFile}` : '',
    ];
    console.log(parts.filter(Boolean).join('  '));
  }
  return current.healthy ? 0 : 1;
}

/** `stack status --json`: what runs where; never the secured stack's credentials (its clientEnv). */
export function statusJson(stateDir: string, current: StackStatus | undefined): Record<string, unknown> {
  if (!current) return { running: false, stateDir };
  const { record } = current;
  return {
    running: true,
    stateDir,
    kind: record.kind,
    kafkaVersion: record.kafkaVersion ?? DEFAULT_KAFKA_VERSION,
    brokers: record.brokers,
    registryUrl: record.registryUrl,
    startedAt: record.startedAt,
    ...(record.detached ? {} : { ownerPid: record.ownerPid }),
    secured: record.clientEnv !== undefined,
    healthy: current.healthy,
    components: current.components,
  };
}

/**
 * `kafka`, `kafka <n>` or `registry`: what a restart, kill, freeze or thaw acts on. A kill names the
 * node (killing every broker at once is `stack down`); freeze and thaw act on the registry only.
 */
export function stackTarget(subcommand: TargetSubcommand, positionals: string[]): StackTarget {
  const usage = TARGET_USAGE[subcommand];
  const [component, node, ...extra] = positionals;
  if (component === 'registry') {
    if (node !== undefined) throw new UsageError(`${usage}: unexpected argument "${node}"`);
    return { component };
  }
  if (component !== 'kafka' || subcommand === 'freeze' || subcommand === 'thaw')
    throw new UsageError(component === undefined ? usage : `${usage}: cannot ${subcommand} "${component}"`);
  if (extra.length > 0) throw new UsageError(`${usage}: unexpected argument "${extra[0]}"`);
  if (node === undefined) {
    if (subcommand === 'kill') throw new UsageError(`${usage}: name the Kafka node to kill`);
    return { component };
  }
  const id = Number(node);
  if (!Number.isInteger(id) || id < 1)
    throw new UsageError(`${usage}: expected a node number, got "${node}"`);
  return { component, node: id };
}

function seconds(since: number): string {
  return `${((Date.now() - since) / 1000).toFixed(1)} s`;
}

async function restart(args: string[]): Promise<number> {
  const { stateDir, positionals } = stateDirOption(args);
  const target = stackTarget('restart', positionals);
  const started = Date.now();
  if (target.component === 'registry') {
    const url = await actOnRegistryIn(stateDir, 'restart', { logger: stderrLogger() });
    console.error(
      `hookledger: schema registry restarted on ${url} in ${seconds(started)}, its schemas read back`,
    );
    return 0;
  }
  const { node } = target;
  const brokers = await actOnKafkaIn(stateDir, 'restart', {
    logger: stderrLogger(),
    ...(node === undefined ? {} : { node }),
  });
  console.error(
    `hookledger: Kafka${node === undefined ? '' : ` node ${node}`} restarted on ${brokers.join(',')} in ${seconds(started)}`,
  );
  return 0;
}

async function kill(args: string[]): Promise<number> {
  const { stateDir, positionals } = stateDirOption(args);
  const target = stackTarget('kill', positionals);
  if (target.component === 'registry') {
    const url = await actOnRegistryIn(stateDir, 'kill', { logger: stderrLogger() });
    console.error(
      `hookledger: schema registry (${url}) killed with SIGKILL; \`hookledger stack restart registry\` starts it again`,
    );
    return 0;
  }
  const node = target.node!;
  const brokers = await actOnKafkaIn(stateDir, 'kill', { logger: stderrLogger(), node });
  console.error(
    `hookledger: Kafka node ${node} (${brokers.join(',')}) killed with SIGKILL; \`hookledger stack restart kafka ${node}\` starts it again`,
  );
  return 0;
}

async function freeze(args: string[]): Promise<number> {
  const { stateDir, positionals } = stateDirOption(args);
  stackTarget('freeze', positionals);
  const url = await actOnRegistryIn(stateDir, 'freeze', { logger: stderrLogger() });
  console.error(
    `hookledger: schema registry (${url}) frozen with SIGSTOP: it accepts connections and answers nothing until \`hookledger stack thaw registry\``,
  );
  return 0;
}

async function thaw(args: string[]): Promise<number> {
  const { stateDir, positionals } = stateDirOption(args);
  stackTarget('thaw', positionals);
  const url = await actOnRegistryIn(stateDir, 'thaw', { logger: stderrLogger() });
  console.error(`hookledger: schema registry (${url}) thawed with SIGCONT`);
  return 0;
}

async function fetch(args: string[]): Promise<number> {
  parseOptions(args, {});
  const started = Date.now();
  const artifacts = await ensureArtifacts({ logger: stderrLogger() });
  console.error(`hookledger: artifacts ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  console.log(`kafka     ${artifacts.kafka.version}`);
  console.log(`kafka-lib ${artifacts.kafkaLib}`);
  console.log(`registry  ${artifacts.registryJar}`);
  return 0;
}

async function kafkaTool(args: string[]): Promise<number> {
  const [tool, ...rest] = args;
  if (!tool || !(tool in KAFKA_TOOLS)) {
    throw new UsageError(
      `stack kafka-tool: ${tool ? `unknown tool "${tool}"` : 'name a tool'} (one of ${Object.keys(KAFKA_TOOLS).join(', ')})`,
    );
  }
  const configured = process.env.KAFKA_BROKERS?.split(',').map((b) => b.trim());
  const record = readStackRecord(defaultStateDir());
  const brokers = configured ?? record?.brokers;
  // The running stack's own tools unless a version is asked for: 3.9 has no 4.1 jars and the reverse.
  const release =
    process.env.HOOKLEDGER_KAFKA_VERSION?.trim() || !record?.kafkaVersion
      ? kafkaRelease()
      : requireKafkaRelease(record.kafkaVersion);
  const [artifacts, java] = await Promise.all([
    ensureArtifacts({ logger: stderrLogger(), release }),
    requireJava(),
  ]);
  return runKafkaTool({ tool, args: rest, artifacts, java: java.path, brokers });
}

const SUBCOMMANDS: Record<string, (args: string[]) => Promise<number>> = {
  up,
  down,
  status,
  restart,
  kill,
  freeze,
  thaw,
  fetch,
  'kafka-tool': kafkaTool,
};

export const command: Command = {
  help,
  // `kafka-tool` passes --help on to Kafka's tool, and each subcommand has its own help.
  ownHelp: true,
  async run(args) {
    const [name, ...rest] = args;
    if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
      console.log(help);
      return 0;
    }
    const subcommand = SUBCOMMANDS[name];
    if (!subcommand) {
      throw new UsageError(
        `stack: unknown subcommand "${name}" (one of ${Object.keys(SUBCOMMANDS).join(', ')})`,
      );
    }
    if (name !== 'kafka-tool' && (rest.includes('--help') || rest.includes('-h'))) {
      console.log(HELP[name]);
      return 0;
    }
    if (name === 'kafka-tool' && (rest.length === 0 || rest[0] === '--help' || rest[0] === '-h')) {
      console.log(HELP[name]);
      return 0;
    }
    try {
      return await subcommand(rest);
    } catch (error) {
      if (error instanceof StackError) throw new CommandFailed(error.message);
      throw error;
    }
  },
};
