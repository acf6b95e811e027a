// `hookledger replay`: rebuilds the derived topics from webhooks.raw side by side (`<topic>.replay-<id>`).
import { TopicConflictError } from '../../../runtime/kafka/ensure-topics.js';
import {
  BoundsError,
  checkRequest,
  parsePartitionOffsets,
  parseTime,
  type RangeRequest,
} from '../../replay/bounds.js';
import { progressReporter } from '../../replay/progress.js';
import { ReplayConflictError, type ReplayStage, runReplay } from '../../replay/replay.js';
import { cutOver, summary } from '../../replay/report.js';
import { defaultReplayId, MissingLiveTopicError, REPLAY_ID } from '../../replay/topics.js';
import { unknownTriggerLines } from '../../replay/trigger-filter.js';
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
import { DIFF_HELP, runReplayDiffCommand } from './replay-diff.js';

const HELP = `usage: hookledger replay [options]
       hookledger replay diff --id <id> [--json]   (compare a replay with live: replay diff --help)

Reads webhooks.raw (all of it, or a range) through the same topologies as the live processors, with
fresh state, into side-by-side topics <topic>.replay-<id> (created with their live twins' settings);
it never writes a live topic. Stops when every raw partition reaches its end bound, prints a summary
(read, written per topic, duplicates, dead-lettered) and how consumers cut over. Meanwhile it shows,
per stage, the source offsets passed of those in range and the records read (a bar on a terminal, a
line every 10 s otherwise); the tables of a whole replay count from where this run started on the
replay's streams, and their total grows until the router is done.

\`hookledger replay diff --id <id>\` then compares the replay's topics with the live ones within its
bounds (see \`hookledger replay diff --help\`).

Safe to interrupt (Ctrl-C): running it again with the same --id resumes from the offsets committed
with the outputs (exactly-once), within the bounds of its first run.

options:
  --id <id>               the replay id (default: the start time, e.g. 20261122-160501; printed first)
  --stage <stage>         dedupe-router (raw → streams), tables (live streams → tables), or all
                          (raw → streams → tables; default)
  --from <time>           start at the first raw record at or after this ISO 8601 time
  --to <time>             stop before the first raw record at or after this time
  --from-offset <p:o,…>   start offsets per raw partition (others: the earliest)
  --to-offset <p:o,…>     end offsets (exclusive) per raw partition (others: the end offset at the start)
  --trigger <name>        only deliveries with this trigger (repeatable, exact name); others are skipped.
                          A name the platform's contract does not list is warned about on stderr (not
                          refused: the platform can enable more); the summary says when none matched
  -h, --help              this text

environment: KAFKA_BROKERS, SCHEMA_REGISTRY_URL, TOPIC_PREFIX, DEDUPE_WINDOW, WEBHOOK_MAX_AGE,
WEBHOOK_MAX_AHEAD, WEBHOOK_DATE_ZONE (give them the live router's values, so the replay routes alike),
INGEST_BODY_LIMIT,
PROCESSOR_SESSION_TIMEOUT_MS, PROCESSOR_TRANSACTION_TIMEOUT_MS, LOG_LEVEL

${CONNECTION_HELP}

${STACK_ENV_HELP}`;

const STAGES: readonly ReplayStage[] = ['dedupe-router', 'tables', 'all'];

export interface ReplayIo {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown; isTTY?: boolean };
  env: NodeJS.ProcessEnv;
  signal?: AbortSignal;
}

/** Runs the command with its input and output injected (tests run it in-process). */
export async function runReplayCommand(args: string[], io: ReplayIo): Promise<number> {
  const { values } = parseOptions(args, {
    id: { type: 'string' },
    stage: { type: 'string', default: 'all' },
    from: { type: 'string' },
    to: { type: 'string' },
    'from-offset': { type: 'string' },
    'to-offset': { type: 'string' },
    trigger: { type: 'string', multiple: true },
  });
  const stage = values.stage as ReplayStage;
  if (!STAGES.includes(stage))
    throw new UsageError(`--stage: expected dedupe-router, tables or all, got "${values.stage}"`);
  const id = values.id ?? defaultReplayId();
  if (!REPLAY_ID.test(id))
    throw new UsageError(`--id: expected letters, digits, ".", "_" or "-" (at most 60), got "${id}"`);
  let request: RangeRequest;
  try {
    request = {
      ...(values.from === undefined ? {} : { fromTime: parseTime('--from', values.from) }),
      ...(values.to === undefined ? {} : { toTime: parseTime('--to', values.to) }),
      ...(values['from-offset'] === undefined
        ? {}
        : { fromOffsets: parsePartitionOffsets('--from-offset', values['from-offset']) }),
      ...(values['to-offset'] === undefined
        ? {}
        : { toOffsets: parsePartitionOffsets('--to-offset', values['to-offset']) }),
    };
    checkRequest(request);
    if (stage === 'tables' && (Object.keys(request).length > 0 || values.trigger !== undefined))
      throw new BoundsError('--stage tables replays the live entity streams whole: no --from/--to/--trigger');
  } catch (error) {
    if (error instanceof BoundsError) throw new UsageError(error.message);
    throw error;
  }
  const config = await clusterConfig(io.env);
  const logger = stderrLogger(config.LOG_LEVEL, 'replay', io.stderr);
  io.stderr.write(`replay ${id}: ${stage}, into <topic>.replay-${id}\n`);
  for (const line of unknownTriggerLines(values.trigger ?? []))
    io.stderr.write(`replay ${id}: warning: ${line}\n`);
  const reporter = progressReporter(`replay ${id}`, io.stderr);
  let result: Awaited<ReturnType<typeof runReplay>>;
  try {
    result = await runReplay({
      config,
      logger,
      id,
      stage,
      request,
      ...(values.trigger === undefined ? {} : { triggers: values.trigger }),
      ...(io.signal === undefined ? {} : { signal: io.signal }),
      onProgress: (p) =>
        reporter.update({
          label: p.stage,
          done: p.done,
          total: p.total,
          read: p.read,
          elapsedMs: p.elapsedMs,
        }),
    });
  } catch (error) {
    reporter.end();
    if (error instanceof BoundsError) throw new UsageError(error.message);
    if (
      error instanceof ReplayConflictError ||
      error instanceof MissingLiveTopicError ||
      error instanceof TopicConflictError
    )
      throw new CommandFailed(error.message);
    const { message } = error as Error;
    const failure = clusterFailure(error, config.KAFKA_BROKERS);
    if (failure) throw failure;
    if ((error as { status?: unknown }).status !== undefined)
      throw new CommandFailed(`schema registry at ${config.SCHEMA_REGISTRY_URL}: ${message.split('\n')[0]}`);
    throw error;
  }
  reporter.end();
  io.stdout.write(
    `${summary(result)}\n\n${cutOver(result, `hookledger replay --id ${id} --stage ${stage}`)}\n`,
  );
  return result.completed ? 0 : 130;
}

export const command: Command = {
  help: HELP,
  // `replay diff --help` is the diff's own text.
  ownHelp: true,
  async run(args) {
    const wantsHelp = args.includes('--help') || args.includes('-h');
    if (args[0] === 'diff') {
      if (wantsHelp) {
        process.stdout.write(`${DIFF_HELP}\n`);
        return 0;
      }
      return runReplayDiffCommand(args.slice(1), {
        stdout: process.stdout,
        stderr: process.stderr,
        env: process.env,
      });
    }
    if (wantsHelp) {
      process.stdout.write(`${HELP}\n`);
      return 0;
    }
    return untilStopSignal((signal) =>
      runReplayCommand(args, { stdout: process.stdout, stderr: process.stderr, env: process.env, signal }),
    );
  },
};
