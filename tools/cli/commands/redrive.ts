// `hookledger redrive`: sends dead-lettered deliveries back through the live router after a fix.
import { DLQ_REASONS, type DlqReason } from '../../../processors/dedupe-router/dead-letter.js';
import { formatDuration } from '../../../runtime/duration.js';
import { kafkaSettings } from '../../../runtime/kafka/settings.js';
import { registryAccess } from '../../../schemas/registry-access.js';
import { createSerde, SchemaNotRegisteredError } from '../../../schemas/serde.js';
import { MissingTopicError } from '../../quarantine/held.js';
import {
  newRunId,
  RedriveIncompleteError,
  type RedriveResult,
  redrive,
  redriveSummary,
} from '../../redrive/redrive.js';
import { EXPIRY_MARGIN_MS } from '../../redrive/select.js';
import { BoundsError, parseTime } from '../../replay/bounds.js';
import { progressReporter } from '../../replay/progress.js';
import { clusterConfig } from '../cluster-config.js';
import {
  CONNECTION_HELP,
  type Command,
  CommandFailed,
  clusterFailure,
  parseOptions,
  stderrLogger,
  UsageError,
  untilStopSignal,
} from '../command.js';
import { STACK_ENV_HELP } from '../stack-env.js';

const MARGIN = formatDuration(EXPIRY_MARGIN_MS);

const HELP = `usage: hookledger redrive [options]

After a fix, appends the dead-lettered deliveries of webhooks.dlq (read read_committed, all of them or
those chosen below) to webhooks.raw again, each once, keyed and partitioned as the original, with the
header hookledger-redrive: <run id> (new for every run). The live dedupe-router (run it with the fix)
processes a redriven id whose recorded decision is "dead-lettered" once per run: it reaches its entity
stream once, and is not written to webhooks.unique again. An id the router routed since (a previous
redrive) is a duplicate, so redriving again adds nothing, while the router remembers the id: for
DEDUPE_WINDOW after its last decision. A dead letter recorded longer ago than DEDUPE_WINDOW less ${MARGIN}
is skipped and counted as expired (an id a redrive routed more than the window ago would be routed a
second time); --include-expired sends them too, as first deliveries.

Records are written in chunks as they are read (at most 1,000 or 4 MiB at a time); on a long run, a
progress line goes to stderr every few seconds (a bar on a terminal): dead letters read, sent so far.
Ctrl-C (SIGINT or SIGTERM) stops the read at once: the summary counts what was read and sent, and the
exit code is 130; running redrive again is safe.

options:
  --reason <code>      only dead letters with this reason (repeatable), one of the codes below
  --from <time>        only dead letters of raw records stored at or after this ISO 8601 time
  --to <time>          only those stored before this time
  --include-expired    send dead letters older than DEDUPE_WINDOW − ${MARGIN} too: say so only when no
                       earlier redrive sent them (their ids are routed as first deliveries)
  --dry-run            read and count; send nothing
  --json               one JSON object on stdout: {runId, dryRun, read, selected: {<reason>: n}, sent,
                       skippedByFilter, skippedUndecodable, skippedFetchAnswers, skippedExpired, repeats, dedupeWindowMs,
                       includeExpired, interrupted}
  -h, --help           this text

reasons (docs/topics.md says what each means; envelope-undecodable ones have no envelope to send):
${wrap(DLQ_REASONS.join(', '), 100, '  ')}

environment: KAFKA_BROKERS, SCHEMA_REGISTRY_URL, TOPIC_PREFIX, DEDUPE_WINDOW (give it the router's value),
LOG_LEVEL

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
  /** Progress on a long run, and what a failed run sent before failing. */
  stderr: { write(text: string): unknown; isTTY?: boolean };
  env: NodeJS.ProcessEnv;
  /** Stops the run (Ctrl-C); the command listens to SIGINT and SIGTERM itself when none is given. */
  signal?: AbortSignal;
}

/** A progress line every few seconds when not on a terminal. */
const PROGRESS_LINE_EVERY_MS = 5_000;

/** Runs the command with its input and output injected (tests run it in-process). */
export async function runRedriveCommand(args: string[], io: RedriveIo): Promise<number> {
  const { values } = parseOptions(args, {
    reason: { type: 'string', multiple: true },
    from: { type: 'string' },
    to: { type: 'string' },
    'include-expired': { type: 'boolean', default: false },
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
  const logger = stderrLogger(config.LOG_LEVEL, 'redrive', io.stderr, 'fatal');
  const settings = kafkaSettings(config, 'hookledger-redrive', logger);
  const serde = createSerde({ ...registryAccess(config), clientId: 'hookledger-redrive' });
  const dryRun = values['dry-run'] ?? false;
  const runId = newRunId();
  const reporter = progressReporter(`redrive ${runId}`, io.stderr, PROGRESS_LINE_EVERY_MS);
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
      dedupeWindowMs: config.DEDUPE_WINDOW,
      includeExpired: values['include-expired'] ?? false,
      dryRun,
      runId,
      ...(io.signal === undefined ? {} : { signal: io.signal }),
      onProgress: (p) =>
        reporter.update({
          label: 'webhooks.dlq',
          done: p.done,
          total: p.total,
          read: p.read,
          counts: [[dryRun ? 'to send' : 'sent', p.sent]],
          elapsedMs: p.elapsedMs,
        }),
    });
    reporter.end();
    io.stdout.write(`${values.json ? redriveJson(result) : redriveSummary(result)}\n`);
    return result.interrupted ? 130 : 0;
  } catch (thrown) {
    reporter.end();
    let error = thrown;
    if (error instanceof RedriveIncompleteError) {
      // What was appended stays: the router processes it, and a new run adds nothing for the ids it routed.
      io.stderr.write(`${error.message}; running redrive again is safe\n`);
      error = error.cause;
    }
    const { message } = error as Error;
    const failure = clusterFailure(error, config.KAFKA_BROKERS);
    if (failure) throw failure;
    if (error instanceof MissingTopicError || error instanceof SchemaNotRegisteredError)
      throw new CommandFailed(message);
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
  run: (args) =>
    untilStopSignal((signal) =>
      runRedriveCommand(args, { stdout: process.stdout, stderr: process.stderr, env: process.env, signal }),
    ),
};
