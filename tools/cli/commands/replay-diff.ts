// `hookledger replay diff --id <id>`: compares a replay's side-by-side topics with their live twins.
import { ConfigError } from '../../../runtime/config.js';
import { diffReplay, ReplayDiffError } from '../../replay/diff.js';
import { diffJson, diffText, equal } from '../../replay/diff-report.js';
import { progressReporter } from '../../replay/progress.js';
import { REPLAY_ID } from '../../replay/topics.js';
import { clusterConfig } from '../cluster-config.js';
import { CommandFailed, clusterFailure, parseOptions, stderrLogger, UsageError } from '../command.js';
import { STACK_ENV_HELP } from '../stack-env.js';

export const DIFF_HELP = `usage: hookledger replay diff --id <id> [--json] [--live-prefix <prefix>]

Compares each <topic>.replay-<id> with its live topic, over what the replay read, to know before
cutting consumers over. Entity streams and the router's other outputs (webhooks.unique, failures, dlq)
are compared per key as multisets of records (their order across raw partitions differs between runs);
tables (entity.<name>.latest) by the last row of each key (a deleted entity and an absent one are the
same). Values are decoded through the registry. Prints records per topic, keys only on one side, keys
whose records differ, with field-level differences for a few of them. Its progress (offsets read of
those to read) goes to stderr, a bar on a terminal, as replay's does.

The live topics keep growing after a replay; only what comes from the raw records within the replay's
bounds (its start and end offsets and --trigger filter, kept at its first run) is compared: the diff
reads that range of webhooks.raw again and counts a live record when its (source, webhookId, ingestId)
is among them. A table row is compared only when its live entity stream has no event from outside the
bounds for that key (others are counted as changed outside the bounds). A replay of the live entity
streams (--stage tables) is bounded by their offsets. Not compared: record timestamps (a redriven
delivery's record is stamped when redrive appended it) and the message of the dead letters the stream
kit writes itself (stage dedupe-router.process: it names the replay's topic).

The replay must have finished (run \`hookledger replay --id <id>\` again to finish it), and the live
processors must have caught up with its bounds (they usually lag by seconds): what they have not
written yet shows as only in the replay.

Exit code 0 when the replay equals live, 1 when it differs, 2 for a usage or configuration mistake,
3 when the diff could not run (one line: Kafka or the registry away, the replay unfinished).

options:
  --id <id>       the replay id
  --json          one JSON object instead of the text: counts and every differing key
  --live-prefix <prefix>
                  compare with the live topics of the topic set with this TOPIC_PREFIX instead (a
                  replay of a new set with more partitions against the one it replaces: docs/scaling.md)
  -h, --help      this text

environment: KAFKA_BROKERS, SCHEMA_REGISTRY_URL, TOPIC_PREFIX, LOG_LEVEL

${STACK_ENV_HELP}`;

export interface ReplayDiffIo {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown; isTTY?: boolean };
  env: NodeJS.ProcessEnv;
}

/** Exit code of a diff that could not run: 1 is kept for "differs", 2 for a usage mistake. */
export const DIFF_FAILED = 3;

/**
 * Runs `replay diff` with its input and output injected (tests run it in-process). Whatever stops it
 * after its arguments were accepted leaves with DIFF_FAILED, so a script can tell a difference apart.
 */
export async function runReplayDiffCommand(args: string[], io: ReplayDiffIo): Promise<number> {
  try {
    return await diffCommand(args, io);
  } catch (error) {
    if (error instanceof UsageError || error instanceof ConfigError) throw error;
    if (error instanceof Error && 'userFacing' in error)
      throw new CommandFailed(error.message, { cause: error, exitCode: DIFF_FAILED });
    // A bug: its stack, still not 1.
    io.stderr.write(`${(error as Error)?.stack ?? String(error)}\n`);
    return DIFF_FAILED;
  }
}

async function diffCommand(args: string[], io: ReplayDiffIo): Promise<number> {
  const { values } = parseOptions(args, {
    id: { type: 'string' },
    json: { type: 'boolean', default: false },
    'live-prefix': { type: 'string' },
  });
  if (values.id === undefined)
    throw new UsageError('replay diff: --id <id> is required (the replay to compare)');
  const id = values.id;
  if (!REPLAY_ID.test(id))
    throw new UsageError(`--id: expected letters, digits, ".", "_" or "-" (at most 60), got "${id}"`);
  const config = await clusterConfig(io.env);
  const logger = stderrLogger(config.LOG_LEVEL, 'replay-diff', io.stderr);
  const reporter = progressReporter(`replay ${id}`, io.stderr);
  let result: Awaited<ReturnType<typeof diffReplay>>;
  try {
    result = await diffReplay({
      config,
      logger,
      id,
      ...(values['live-prefix'] === undefined ? {} : { livePrefix: values['live-prefix'] }),
      onProgress: (p) =>
        reporter.update({ label: 'diff', done: p.done, total: p.total, elapsedMs: p.elapsedMs }),
    });
  } catch (error) {
    reporter.end();
    if (error instanceof ReplayDiffError) throw new CommandFailed(error.message);
    const failure = clusterFailure(error, config.KAFKA_BROKERS);
    if (failure) throw failure;
    if ((error as { status?: unknown }).status !== undefined)
      throw new CommandFailed(
        `schema registry at ${config.SCHEMA_REGISTRY_URL}: ${(error as Error).message.split('\n')[0]}`,
      );
    throw error;
  }
  reporter.end();
  io.stdout.write(`${values.json ? diffJson(result) : diffText(result)}\n`);
  return equal(result) ? 0 : 1;
}
