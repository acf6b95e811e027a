// `hookledger redrive`: sends dead-lettered deliveries back through the live router after a fix.
import { DLQ_REASONS, type DlqReason } from '../../../processors/dedupe-router/dead-letter.js';
import { kafkaSettings } from '../../../runtime/kafka/settings.js';
import { createLogger } from '../../../runtime/log.js';
import { registryAccess } from '../../../schemas/registry-access.js';
import { createSerde } from '../../../schemas/serde.js';
import { type RedriveResult, redrive, redriveSummary } from '../../redrive/redrive.js';
import { BoundsError, parseTime } from '../../replay/bounds.js';
import { clusterConfig } from '../cluster-config.js';
import {
  CONNECTION_HELP,
  type Command,
  CommandFailed,
  clusterFailure,
  parseOptions,
  UsageError,
} from '../command.js';
import { STACK_ENV_HELP } from '../stack-env.js';

const HELP = `usage: hookledger redrive [options]

After a fix, appends the dead-lettered deliveries of webhooks.dlq (read read_committed, all of them or
those chosen below) to webhooks.raw again, each once, keyed and partitioned as the original, with the
header hookledger-redrive: <run id> (new for every run). The live dedupe-router (run it with the fix)
processes a redriven id whose recorded decision is "dead-lettered" once per run: it reaches its entity
stream once, and is not written to webhooks.unique again. An id the router routed since (a previous
redrive) is a duplicate, so redriving again adds nothing. An id older than the dedupe window is no
longer known to the router and is processed as a first delivery.

options:
  --reason <code>   only dead letters with this reason (repeatable), one of the codes below
  --from <time>     only dead letters of raw records stored at or after this ISO 8601 time
  --to <time>       only those stored before this time
  --dry-run         read and count; send nothing
  --json            one JSON object on stdout: {runId, dryRun, read, selected: {<reason>: n}, sent,
                    skippedByFilter, skippedUndecodable, repeats}
  -h, --help        this text

reasons (docs/topics.md says what each means; envelope-undecodable ones have no envelope to send):
${wrap(DLQ_REASONS.join(', '), 100, '  ')}

environment: KAFKA_BROKERS, SCHEMA_REGISTRY_URL, TOPIC_PREFIX, LOG_LEVEL

${CONNECTION_HELP}

${STACK_ENV_HELP}`;

function isDlqReason(reason: string): reason is DlqReason {
  return (DLQ_REASONS as readonly string[]).includes(reason);
}

/** Words joined by single spaces, broken into lines of at most `width` characters, each indented. */
function wrap(text: string, width: number, indent: string): string {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line !== '' && indent.length + line.length + 1 + word.length > width) {
      lines.push(indent + line);
      line = word;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  return [...lines, indent + line].join('\n');
}

/** `redrive --json`: the counts, reasons as an object. */
export function redriveJson(result: RedriveResult): string {
  return JSON.stringify({ ...result, selected: Object.fromEntries(result.selected) });
}

export interface RedriveIo {
  stdout: { write(text: string): unknown };
  env: NodeJS.ProcessEnv;
}

/** Runs the command with its input and output injected (tests run it in-process). */
export async function runRedriveCommand(args: string[], io: RedriveIo): Promise<number> {
  const { values } = parseOptions(args, {
    reason: { type: 'string', multiple: true },
    from: { type: 'string' },
    to: { type: 'string' },
    'dry-run': { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
  });
  let fromTime: number | undefined;
  let toTime: number | undefined;
  try {
    fromTime = values.from === undefined ? undefined : parseTime('--from', values.from);
    toTime = values.to === undefined ? undefined : parseTime('--to', values.to);
  } catch (error) {
    if (error instanceof BoundsError) throw new UsageError(error.message);
    throw error;
  }
  const unknown = (values.reason ?? []).filter((reason) => !isDlqReason(reason));
  if (unknown.length > 0)
    throw new UsageError(
      `--reason: unknown reason ${unknown.map((r) => `"${r}"`).join(', ')} (the dead-letter reasons: ${DLQ_REASONS.join(', ')})`,
    );
  if (fromTime !== undefined && toTime !== undefined && toTime <= fromTime)
    throw new UsageError('--to must be later than --from');
  const config = await clusterConfig(io.env);
  const verbose = config.LOG_LEVEL === 'debug' || config.LOG_LEVEL === 'trace';
  const logger = createLogger({ level: verbose ? config.LOG_LEVEL : 'fatal', name: 'redrive' });
  const settings = kafkaSettings(config, 'hookledger-redrive', logger);
  const serde = createSerde({ ...registryAccess(config), clientId: 'hookledger-redrive' });
  try {
    const result = await redrive({
      settings,
      serde,
      prefix: config.TOPIC_PREFIX,
      filter: {
        ...(values.reason === undefined ? {} : { reasons: values.reason }),
        ...(fromTime === undefined ? {} : { fromTime }),
        ...(toTime === undefined ? {} : { toTime }),
      },
      dryRun: values['dry-run'] ?? false,
    });
    io.stdout.write(`${values.json ? redriveJson(result) : redriveSummary(result)}\n`);
    return 0;
  } catch (error) {
    const { message } = error as Error;
    const failure = clusterFailure(error, config.KAFKA_BROKERS);
    if (failure) throw failure;
    if ((error as { status?: unknown }).status === 404)
      throw new CommandFailed(
        `the value schema of ${config.TOPIC_PREFIX}webhooks.raw is not registered at ${config.SCHEMA_REGISTRY_URL}: run \`hookledger topics\` first`,
      );
    if ((error as { status?: unknown }).status !== undefined)
      throw new CommandFailed(`schema registry at ${config.SCHEMA_REGISTRY_URL}: ${message.split('\n')[0]}`);
    throw error;
  }
}

export const command: Command = {
  help: HELP,
  run: (args) => runRedriveCommand(args, { stdout: process.stdout, env: process.env }),
};
