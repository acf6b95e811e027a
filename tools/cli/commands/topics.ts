// `hookledger topics`: creates or verifies every topic of the catalog and registers the value schemas.
import { type Config, loadConfig } from '../../../runtime/config.js';
import {
  brokerCount,
  defaultReplicationFactor,
  topicStates,
  withAdmin,
} from '../../../runtime/kafka/admin.js';
import {
  type EnsureTopicsResult,
  ensureTopics,
  TopicConflictError,
  TopicsNotReadyError,
} from '../../../runtime/kafka/ensure-topics.js';
import { kafkaSettings } from '../../../runtime/kafka/settings.js';
import type { Logger } from '../../../runtime/log.js';
import { StartupError } from '../../../runtime/startup-error.js';
import { registryAccess } from '../../../schemas/registry-access.js';
import { loadSchema } from '../../../schemas/schema-files.js';
import {
  CompatibilityLevelError,
  createSerde,
  type RegisteredSubject,
  SchemaNotRegisteredError,
} from '../../../schemas/serde.js';
import { DurabilityError, rawDurabilityCheck } from '../../../schemas/topic-checks.js';
import { catalogSubjects, DEFAULT_PARTITIONS, topicCatalog, topicNames } from '../../../schemas/topics.js';
import { strimziTopics } from '../../deploy/strimzi-topics.js';
import { clusterConfig } from '../cluster-config.js';
import {
  CONNECTION_HELP,
  type Command,
  CommandFailed,
  clusterFailure,
  parseOptions,
  stderrLogger,
  UsageError,
} from '../command.js';
import { STACK_ENV_HELP } from '../stack-env.js';

const HELP = `usage: hookledger topics [options]

Creates the topics hookledger uses, or verifies that existing ones have their expected configuration,
and registers the value schemas (BACKWARD_TRANSITIVE). Existing topics are never changed: a conflict
stops the run with the topic, the setting, the found and the expected value. Running it again changes
nothing.

options:
  --partitions <n>          partition count of new topics (default: TOPIC_PARTITIONS, else the
                            existing ${topicNames().raw}'s, else ${DEFAULT_PARTITIONS}); never changed once set
  --replication-factor <n>  replication factor of new topics (default: 3, or the broker count if smaller)
  --local                   a local stack: warn about a raw topic that is not durable enough instead of
                            refusing it (also HOOKLEDGER_LOCAL_STACK=true)
  --dry-run                 compare and report; create and register nothing (exit 0)
  --check                   compare topics and schemas, change nothing; exit 1 when a topic would be
                            created or a schema is not registered (drift), 3 when the check failed
  --json                    one JSON object on stdout: {topics, schemas, changed, drift}
  --output strimzi          print the topics as Strimzi KafkaTopic resources instead (partitions,
                            replicas, configs; no cluster is contacted, nothing is created or registered)
  --strimzi-cluster <name>  with --output strimzi: the Kafka resource's name (label strimzi.io/cluster)
  --namespace <ns>          with --output strimzi: the resources' namespace (default: none written)
  -h, --help                this text

environment: KAFKA_BROKERS, SCHEMA_REGISTRY_URL, TOPIC_PREFIX, TOPIC_PARTITIONS, INGEST_BODY_LIMIT,
DEDUPE_WINDOW, QUARANTINE_RETENTION, HOOKLEDGER_LOCAL_STACK, LOG_LEVEL

${CONNECTION_HELP}

${STACK_ENV_HELP}`;

/** The registry could not be reached or refused a schema (an incompatible change, say). */
export class SchemaRegistrationError extends Error {
  override name = 'SchemaRegistrationError';
}

export interface SetUpTopicsOptions {
  config: Config;
  logger: Logger;
  /** Warn instead of refusing a raw topic that is not durable enough for production. */
  local: boolean;
  partitions?: number;
  /** Partitions when neither `partitions`, TOPIC_PARTITIONS nor an existing raw topic says (start: 4 locally). */
  newPartitions?: number;
  replicationFactor?: number;
  dryRun?: boolean;
  /** Where durability warnings go (a local stack). */
  warn: (message: string) => void;
}

export interface SetUpTopicsResult extends EnsureTopicsResult {
  partitions: number;
  replicationFactor: number;
  /** Empty on a dry run. */
  schemas: RegisteredSubject[];
}

/**
 * Creates or verifies every catalog topic, then registers the value schemas. Throws TopicConflictError,
 * DurabilityError, CompatibilityLevelError, SchemaRegistrationError or TopicsNotReadyError for what a
 * person must resolve (setUpFailure turns them into one line).
 */
export async function setUpTopics({
  config,
  logger,
  local,
  partitions,
  newPartitions = DEFAULT_PARTITIONS,
  replicationFactor,
  dryRun = false,
  warn,
}: SetUpTopicsOptions): Promise<SetUpTopicsResult> {
  const names = topicNames(config.TOPIC_PREFIX);
  const settings = kafkaSettings(config, 'hookledger-topics', logger);
  const ensured = await withAdmin(settings, async (admin) => {
    const rf = replicationFactor ?? defaultReplicationFactor(await brokerCount(admin));
    const count =
      partitions ??
      config.TOPIC_PARTITIONS ??
      (await topicStates(admin, [names.raw])).get(names.raw)?.partitions ??
      newPartitions;
    const specs = topicCatalog({
      prefix: config.TOPIC_PREFIX,
      bodyLimit: config.INGEST_BODY_LIMIT,
      dedupeWindowMs: config.DEDUPE_WINDOW,
      partitions: count,
      replicationFactor: rf,
      quarantineRetentionMs: config.QUARANTINE_RETENTION,
    });
    const result = await ensureTopics(admin, specs, {
      dryRun,
      logger,
      check: rawDurabilityCheck({ rawTopic: names.raw, local, warn }),
    });
    return { ...result, partitions: count, replicationFactor: rf };
  });
  const registryUrl = config.SCHEMA_REGISTRY_URL;
  const schemas = dryRun
    ? []
    : // The one command that registers, whatever SCHEMA_REGISTRY_AUTO_REGISTER says for the services.
      await createSerde({ ...registryAccess(config), autoRegister: true, clientId: 'hookledger-topics' })
        .registerAll(config.TOPIC_PREFIX)
        .catch((error: unknown) => {
          if (error instanceof CompatibilityLevelError) throw error;
          throw new SchemaRegistrationError(
            `schema registry at ${registryUrl}: ${(error as Error).message}`,
            {
              cause: error,
            },
          );
        });
  return { ...ensured, schemas };
}

/** What setUpTopics throws for a person to resolve, as the one line the CLI prints; undefined otherwise. */
export function setUpFailure(error: unknown): CommandFailed | undefined {
  const expected =
    error instanceof TopicConflictError ||
    error instanceof DurabilityError ||
    error instanceof CompatibilityLevelError ||
    error instanceof SchemaRegistrationError ||
    error instanceof TopicsNotReadyError;
  return expected ? new CommandFailed(error.message, { cause: error }) : undefined;
}

/** A schema of the catalog and its id under its subject; no id: the subject does not hold it (drift). */
export interface CheckedSchema {
  subject: string;
  schema: string;
  id?: number;
}

/** Every catalog subject looked up, nothing registered (`topics --check`). */
export async function registeredSchemas(config: Config): Promise<CheckedSchema[]> {
  const serde = createSerde({
    ...registryAccess(config),
    autoRegister: false,
    clientId: 'hookledger-topics',
  });
  const checked: CheckedSchema[] = [];
  for (const { subject, schema } of catalogSubjects(config.TOPIC_PREFIX)) {
    try {
      checked.push({ subject, schema, id: await serde.register(subject, loadSchema(schema)) });
    } catch (error) {
      if (!(error instanceof SchemaNotRegisteredError)) throw error;
      checked.push({ subject, schema });
    }
  }
  return checked;
}

/** `topics --check` could not say whether there is drift: exit 3, never 1. */
function checkFailed(error: unknown): unknown {
  if (error instanceof CommandFailed || error instanceof StartupError)
    return new CommandFailed(error.message, { cause: error, exitCode: 3 });
  return error;
}

function positiveInteger(flag: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1)
    throw new UsageError(`${flag}: expected a positive integer, got "${text}"`);
  return value;
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  return rows
    .map((row) =>
      row
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** `--output strimzi`: the catalog as KafkaTopic resources, from the configuration alone. */
function strimziOutput(
  values: {
    output?: string | undefined;
    'strimzi-cluster'?: string | undefined;
    namespace?: string | undefined;
  },
  {
    partitions,
    replicationFactor,
  }: { partitions?: number | undefined; replicationFactor?: number | undefined },
): string {
  if (values.output !== 'strimzi')
    throw new UsageError(`--output: expected strimzi, got ${values.output ?? '(none)'}`);
  const cluster = values['strimzi-cluster'];
  if (!cluster)
    throw new UsageError('--output strimzi: --strimzi-cluster <name of the Kafka resource> is required');
  // Neither Kafka nor the registry is contacted: their variables may be unset here.
  const config = loadConfig({
    KAFKA_BROKERS: 'unused:9092',
    SCHEMA_REGISTRY_URL: 'http://unused',
    ...process.env,
  });
  const catalog = topicCatalog({
    prefix: config.TOPIC_PREFIX,
    bodyLimit: config.INGEST_BODY_LIMIT,
    dedupeWindowMs: config.DEDUPE_WINDOW,
    partitions: partitions ?? config.TOPIC_PARTITIONS ?? DEFAULT_PARTITIONS,
    replicationFactor: replicationFactor ?? 3,
    quarantineRetentionMs: config.QUARANTINE_RETENTION,
  });
  return strimziTopics(catalog, { cluster, ...(values.namespace ? { namespace: values.namespace } : {}) });
}

export const command: Command = {
  help: HELP,
  async run(args) {
    const { values } = parseOptions(args, {
      partitions: { type: 'string' },
      'replication-factor': { type: 'string' },
      local: { type: 'boolean', default: false },
      'dry-run': { type: 'boolean', default: false },
      check: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
      output: { type: 'string' },
      'strimzi-cluster': { type: 'string' },
      namespace: { type: 'string' },
    });
    const check = values.check ?? false;
    const partitions = positiveInteger('--partitions', values.partitions);
    const replicationFactor = positiveInteger('--replication-factor', values['replication-factor']);
    if (values.output !== undefined || values['strimzi-cluster'] !== undefined) {
      console.log(strimziOutput(values, { partitions, replicationFactor }));
      return 0;
    }
    const dryRun = (values['dry-run'] ?? false) || check;
    // Before any topic is created: a registry out of reach, refusing the login or not trusted is one line
    // naming the variable, and nothing is left half set up. A dry run registers nothing.
    const config = await clusterConfig(process.env, { registry: !dryRun || check }).catch(
      (error: unknown) => {
        throw check ? checkFailed(error) : error;
      },
    );
    // The outcome is printed as one line; client logs only when debugging.
    const logger = stderrLogger(config.LOG_LEVEL, 'topics', process.stderr, 'fatal');

    let result: SetUpTopicsResult;
    try {
      result = await setUpTopics({
        config,
        logger,
        local: (values.local ?? false) || config.HOOKLEDGER_LOCAL_STACK,
        partitions,
        replicationFactor,
        dryRun,
        warn: (message) => console.error(`warning: ${message}`),
      });
    } catch (error) {
      // A conflict is drift; the rest means the check could not say.
      if (check && error instanceof TopicConflictError)
        throw new CommandFailed(error.message, { cause: error, exitCode: 1 });
      const failure = setUpFailure(error) ?? clusterFailure(error, config.KAFKA_BROKERS) ?? error;
      throw check ? checkFailed(failure) : failure;
    }
    const schemas = check
      ? await registeredSchemas(config).catch((error: unknown) => {
          const reason = (error as Error).message.split('\n')[0];
          throw new CommandFailed(`schema registry at ${config.SCHEMA_REGISTRY_URL}: ${reason}`, {
            cause: error,
            exitCode: 3,
          });
        })
      : result.schemas;
    const wouldCreate = result.topics.filter((t) => t.action === 'would create').length;
    const drift = check && (wouldCreate > 0 || schemas.some((s) => s.id === undefined));

    if (values.json) {
      const { topics, changed } = result;
      console.log(JSON.stringify({ topics, schemas, changed, ...(check ? { drift } : {}) }));
      return drift ? 1 : 0;
    }

    console.log(
      table([
        ['topic', 'partitions', 'replication', 'action'],
        ...result.topics.map((t) => [t.name, String(t.partitions), String(t.replicationFactor), t.action]),
      ]),
    );
    if (schemas.length > 0) {
      console.log('');
      console.log(
        table([
          ['subject', 'schema', 'id'],
          ...schemas.map((s) => [
            s.subject,
            `${s.schema}.avsc`,
            s.id === undefined ? 'not registered' : String(s.id),
          ]),
        ]),
      );
    }
    const created = result.topics.filter((t) => t.action !== 'verified').length;
    console.log('');
    if (check) {
      const missing = schemas.filter((s) => s.id === undefined).length;
      console.log(
        drift
          ? `drift: ${created} topic(s) would be created, ${missing} schema(s) not registered; run \`hookledger topics\``
          : 'no drift: every topic and schema as expected; nothing was changed',
      );
      return drift ? 1 : 0;
    }
    if (dryRun)
      console.log(`dry run: ${created} topic(s) would be created; nothing was changed or registered`);
    else if (!result.changed) console.log('nothing changed: every topic already existed as expected');
    else console.log(`created ${created} topic(s); verified ${result.topics.length - created}`);
    return 0;
  },
};
