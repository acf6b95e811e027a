// `hookledger quarantine`: what ingest kept of refused requests (list), and sending the authentic ones
// on once the right key is configured (promote).
import { loadSources } from '../../../ingest/sources.js';
import type { Config } from '../../../runtime/config.js';
import { formatDuration } from '../../../runtime/duration.js';
import { kafkaSettings } from '../../../runtime/kafka/settings.js';
import { QUARANTINE_REASONS } from '../../../schemas/quarantined-request.js';
import { registryAccess } from '../../../schemas/registry-access.js';
import { createSerde, SchemaNotRegisteredError } from '../../../schemas/serde.js';
import { envelopeMaxMessageBytes } from '../../../schemas/topics.js';
import type { RouterMemory } from '../../quarantine/expiry.js';
import { MissingTopicError } from '../../quarantine/held.js';
import { formatListing, listingJson, listQuarantine } from '../../quarantine/list.js';
import { PROMOTE_HEADER, promote, promoteSummary } from '../../quarantine/promote.js';
import { EXPIRY_MARGIN_MS } from '../../redrive/select.js';
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
import { STACK_ENV_HELP, withLocalStack } from '../stack-env.js';

const REASONS = QUARANTINE_REASONS.join(', ');
const MARGIN = formatDuration(EXPIRY_MARGIN_MS);

const HELP: Record<string, string> = {
  list: `usage: hookledger quarantine list [--source <name>] [--reason <reason>] [--json]

Lists the requests webhooks.quarantine holds (read read_committed), oldest first: when each arrived,
its source, its webhook id, why its signature failed, which key ids it was compared with (never a
key), and whether its webhook id was promoted (and by which run) or is still held.

options:
  --source <name>   only this source's requests
  --reason <reason> only this reason: ${REASONS}
                    (ingest now keeps only mismatch; the others are in records older versions wrote)
  --json            a JSON array on stdout: [{receivedAt, source, webhookId, reason, triedKeyIds,
                    ingestId, promotedBy}] (promotedBy null while held)
  -h, --help        this text

environment: KAFKA_BROKERS, SCHEMA_REGISTRY_URL, TOPIC_PREFIX, LOG_LEVEL

${CONNECTION_HELP}

${STACK_ENV_HELP}`,
  promote: `usage: hookledger quarantine promote --source <name> [--include-expired] [--dry-run]

Checks each request of the source held in webhooks.quarantine against the source's keys configured
now (HOOKLEDGER_SOURCES or HOOKLEDGER_SOURCES_FILE, as ingest reads them) and appends the authentic
ones to webhooks.raw: the raw envelope ingest would have written, verifiedKeyId = the key that
verifies now, with the header ${PROMOTE_HEADER}: <run id>. The dedupe-router then treats each like
any delivery: an id that got through meanwhile (the platform's retries) stays a duplicate. Requests
no key verifies stay in the quarantine, which keeps them for QUARANTINE_RETENTION.

The router remembers an id for DEDUPE_WINDOW, and another attempt of the id may have been routed up to
WEBHOOK_MAX_AGE + WEBHOOK_MAX_AHEAD before a quarantined request was received. A request received longer
ago than DEDUPE_WINDOW − WEBHOOK_MAX_AGE − WEBHOOK_MAX_AHEAD − ${MARGIN} (about 3.9 days with the defaults)
is held back and counted as expired: promoting it could route its id a second time.

Each webhook id is promoted once, across runs: its raw record and a mark in
webhooks.quarantine-promotions are committed in one transaction. A run that stops half-way (a crash,
Ctrl-C) is resumed by running the command again; running it twice promotes nothing twice.

options:
  --source <name>     the source whose requests to promote (required; a source with keys)
  --include-expired   promote the expired requests too: say so only when no other attempt of their
                      webhook ids was accepted (ingest refused every one of them)
  --dry-run           read, verify and count; send nothing
  -h, --help          this text

environment: KAFKA_BROKERS, SCHEMA_REGISTRY_URL, TOPIC_PREFIX, HOOKLEDGER_SOURCES or
HOOKLEDGER_SOURCES_FILE, PROCESSOR_TRANSACTION_TIMEOUT_MS, INGEST_BODY_LIMIT, DEDUPE_WINDOW,
WEBHOOK_MAX_AGE, WEBHOOK_MAX_AHEAD (give them the router's values), LOG_LEVEL

${CONNECTION_HELP}

${STACK_ENV_HELP}`,
};

const OVERVIEW = `usage: hookledger quarantine <list|promote> [options]

A request to a signed source whose signature does not verify gets 401, and ingest keeps it (within a
bound per source) in webhooks.quarantine. After a key mix-up, configure the right key and promote:
the authentic requests go to webhooks.raw, once each.

subcommands:
  list      what the quarantine holds, and what was promoted
  promote   send a source's authentic requests to webhooks.raw

Run \`hookledger quarantine <subcommand> --help\` for its options.`;

export interface QuarantineIo {
  stdout: { write(text: string): unknown };
  env: NodeJS.ProcessEnv;
}

function clients(config: Config, name: string) {
  const logger = stderrLogger(config.LOG_LEVEL, name, process.stderr, 'fatal');
  return {
    logger,
    settings: kafkaSettings(config, `hookledger-${name}`, logger),
    serde: createSerde({ ...registryAccess(config), clientId: `hookledger-${name}` }),
  };
}

/** Expected failures as one line: Kafka away, a topic or a schema missing, the registry refusing. */
function failure(error: unknown, config: Config): unknown {
  const cluster = clusterFailure(error, config.KAFKA_BROKERS);
  if (cluster) return cluster;
  if (error instanceof MissingTopicError || error instanceof SchemaNotRegisteredError)
    return new CommandFailed(error.message);
  const status = (error as { status?: unknown }).status;
  if (status === 404)
    return new CommandFailed(
      `a value schema is not registered at ${config.SCHEMA_REGISTRY_URL}: run \`hookledger topics\` first`,
    );
  if (status !== undefined)
    return new CommandFailed(
      `schema registry at ${config.SCHEMA_REGISTRY_URL}: ${(error as Error).message.split('\n')[0]}`,
    );
  return error;
}

async function runList(args: string[], io: QuarantineIo): Promise<number> {
  const { values } = parseOptions(args, {
    source: { type: 'string' },
    reason: { type: 'string' },
    json: { type: 'boolean', default: false },
  });
  if (values.reason !== undefined && !(QUARANTINE_REASONS as readonly string[]).includes(values.reason))
    throw new UsageError(`--reason: expected one of ${REASONS} (got "${values.reason}")`);
  const config = await clusterConfig(io.env);
  const { settings, serde } = clients(config, 'quarantine');
  try {
    const listed = await listQuarantine({
      settings,
      serde,
      prefix: config.TOPIC_PREFIX,
      filter: {
        ...(values.source === undefined ? {} : { source: values.source }),
        ...(values.reason === undefined ? {} : { reason: values.reason }),
      },
    });
    io.stdout.write(`${values.json ? listingJson(listed) : formatListing(listed)}\n`);
    return 0;
  } catch (error) {
    throw failure(error, config);
  }
}

/** What the router remembers, from the variables it reads them from. */
export function routerMemory(config: Config): RouterMemory {
  return {
    dedupeWindowMs: config.DEDUPE_WINDOW,
    maxAgeMs: config.WEBHOOK_MAX_AGE,
    maxAheadMs: config.WEBHOOK_MAX_AHEAD,
  };
}

async function runPromote(args: string[], io: QuarantineIo): Promise<number> {
  const { values } = parseOptions(args, {
    source: { type: 'string' },
    'include-expired': { type: 'boolean', default: false },
    'dry-run': { type: 'boolean', default: false },
  });
  if (values.source === undefined) throw new UsageError('quarantine promote: --source <name> is required');
  // Resolved here, not only in clusterConfig: the local stack's development sources come with it.
  const env = withLocalStack(io.env);
  const config = await clusterConfig(env);
  const sources = loadSources(env);
  const source = sources.get(values.source);
  if (source === undefined)
    throw new CommandFailed(
      `source "${values.source}" is not configured (configured: ${[...sources.keys()].join(', ')}); promote checks requests against its keys`,
    );
  if (source.signature === 'none')
    throw new CommandFailed(
      `source "${values.source}" is declared insecure ("signature": "none"): nothing of it is quarantined`,
    );
  const { settings, serde } = clients(config, 'quarantine-promote');
  try {
    const result = await promote({
      settings,
      serde,
      prefix: config.TOPIC_PREFIX,
      source,
      transactionTimeoutMs: config.PROCESSOR_TRANSACTION_TIMEOUT_MS,
      maxMessageBytes: envelopeMaxMessageBytes(config.INGEST_BODY_LIMIT),
      memory: routerMemory(config),
      includeExpired: values['include-expired'] ?? false,
      dryRun: values['dry-run'] ?? false,
    });
    io.stdout.write(`${promoteSummary(result)}\n`);
    return 0;
  } catch (error) {
    throw failure(error, config);
  }
}

/** Runs the command with its input and output injected (tests run it in-process). */
export async function runQuarantineCommand(args: string[], io: QuarantineIo): Promise<number> {
  const [subcommand, ...rest] = args;
  const wantsHelp = rest.includes('--help') || rest.includes('-h');
  if (subcommand === '--help' || subcommand === '-h') {
    io.stdout.write(`${OVERVIEW}\n`);
    return 0;
  }
  if (subcommand === undefined) throw new UsageError('quarantine: expected a subcommand: list or promote');
  const help = HELP[subcommand];
  if (help === undefined)
    throw new UsageError(`quarantine: unknown subcommand "${subcommand}" (expected list or promote)`);
  if (wantsHelp) {
    io.stdout.write(`${help}\n`);
    return 0;
  }
  return subcommand === 'list' ? runList(rest, io) : runPromote(rest, io);
}

export const command: Command = {
  help: OVERVIEW,
  ownHelp: true,
  run: (args) => runQuarantineCommand(args, { stdout: process.stdout, env: process.env }),
};
