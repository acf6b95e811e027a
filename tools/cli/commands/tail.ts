// `hookledger tail <stream>`: prints a topic's records as JSON lines, values decoded through the registry.

import { parseDuration } from '../../../runtime/duration.js';
import { kafkaSettings } from '../../../runtime/kafka/settings.js';
import { currentSchemaOf } from '../../../schemas/own-schema-id.js';
import { registryAccess } from '../../../schemas/registry-access.js';
import { createSerde } from '../../../schemas/serde.js';
import { BoundsError, parseTime } from '../../replay/bounds.js';
import { resolveTopic, streamsHelp } from '../../tail/streams.js';
import { RegistryUnavailableError, type StartAt, tail, UnknownTopicError } from '../../tail/tail.js';
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

const HELP = `usage: hookledger tail <stream> [options]

Prints the records of a topic as JSON lines: {topic, partition, offset, timestamp, key, value}, the value
decoded through the schema registry (a tombstone prints value null). Bytes fields such as the raw
envelope's body print as text when they are valid UTF-8 text, else as base64; "encodings" names which,
by path (e.g. {"value.body":"utf8"}). Reads committed records only (read_committed), assigning the
partitions itself: it joins no consumer group and commits nothing. Records are in order within a
partition; partitions interleave.

A compacted topic (cleanup.policy compact, as the broker has it) is a table: read --from-beginning, it
is read to its end first, then printed as the last record of each key, in partition and offset order
(a tombstone removes its key); with --follow every change after that prints as it comes, tombstones as
value null. --history prints every record instead, as for any other topic.

<stream> is a topic's logical name, TOPIC_PREFIX added; <name> is one of those beside its pattern, and
* marks a compacted topic:
${streamsHelp()}
Any other name is taken as a full topic name (a replay's copy, say: entity.user.latest.replay-try1).

options:
  --from-beginning   start at each partition's earliest record (default: only records written from now)
  --offset <n>       start at offset n of each partition read; -n: its last n offsets (as kcat's -o)
  --from <time>      start at each partition's first record at or after an ISO 8601 time with a zone
                     (2026-11-26T09:00:00Z), or a duration ago (10m, 2h, 7d)
  --partition <n>    only this partition (repeatable, or a list: 0,3)
  --follow           keep waiting for new records (default: stop once caught up with the end offsets taken
                     at the start; without --from-beginning, --offset or --from, tail always follows)
  --history          a compacted topic's every record, not only the last per key
  --key <key>        only records with this key
  --limit <n>        stop after printing n records (rows, for a table)
  -h, --help         this text

environment: KAFKA_BROKERS, SCHEMA_REGISTRY_URL, TOPIC_PREFIX, LOG_LEVEL

${CONNECTION_HELP}

${STACK_ENV_HELP}`;

/** `--offset -10` as kcat takes it, joined into `--offset=-10` (parseArgs would take -10 for an option). */
export function joinNegativeOffset(args: readonly string[]): string[] {
  const joined: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const next = args[i + 1];
    if (args[i] === '--offset' && next !== undefined && /^-\d+$/.test(next)) {
      joined.push(`--offset=${next}`);
      i++;
    } else joined.push(args[i]!);
  }
  return joined;
}

/** `--offset` or `--from` as a start position; undefined when neither is given. */
export function startOf(
  values: { offset?: string | undefined; from?: string | undefined },
  now: number = Date.now(),
): StartAt | undefined {
  if (values.offset !== undefined && values.from !== undefined)
    throw new UsageError('--offset and --from each say where to start: give one');
  if (values.offset !== undefined) {
    const m = /^(-?)(\d+)$/.exec(values.offset.trim());
    if (m === null)
      throw new UsageError(
        `--offset: expected an offset (42) or -n for the last n (-10), got "${values.offset}"`,
      );
    return m[1] === '-' ? { lastRecords: BigInt(m[2]!) } : { offset: BigInt(m[2]!) };
  }
  if (values.from !== undefined) {
    const ago = parseDuration(values.from);
    if (ago !== undefined) return { time: now - ago };
    try {
      return { time: parseTime('--from', values.from) };
    } catch (error) {
      if (!(error instanceof BoundsError)) throw error;
      throw new UsageError(`${error.message}, or a duration ago such as 10m`);
    }
  }
  return undefined;
}

/** `--partition 0 --partition 3` or `--partition 0,3`. */
export function partitionsOf(texts: readonly string[] | undefined): number[] | undefined {
  if (texts === undefined) return undefined;
  return texts.flatMap((text) =>
    text.split(',').map((part) => {
      const n = Number(part.trim());
      if (part.trim() === '' || !Number.isInteger(n) || n < 0)
        throw new UsageError(`--partition: expected a partition number such as 0, got "${text}"`);
      return n;
    }),
  );
}

export interface TailIo {
  stdout: { write(text: string): unknown };
  env: NodeJS.ProcessEnv;
  /** Stops a follow; the command installs its own SIGINT handler when none is given. */
  signal?: AbortSignal;
}

/** Runs the command with its input and output injected (tests run it in-process). */
export async function runTail(args: string[], io: TailIo): Promise<number> {
  const { values, positionals } = parseOptions(
    joinNegativeOffset(args),
    {
      'from-beginning': { type: 'boolean', default: false },
      follow: { type: 'boolean', default: false },
      history: { type: 'boolean', default: false },
      key: { type: 'string' },
      limit: { type: 'string' },
      offset: { type: 'string' },
      from: { type: 'string' },
      partition: { type: 'string', multiple: true },
    },
    true,
  );
  const startAt = startOf(values);
  const partitions = partitionsOf(values.partition);
  if (startAt !== undefined && values['from-beginning'])
    throw new UsageError('--from-beginning, --offset and --from each say where to start: give one');
  if (positionals.length !== 1) {
    throw new UsageError(
      positionals.length === 0
        ? 'name the stream to tail, e.g. `hookledger tail webhooks.raw`'
        : `expected one stream, got ${positionals.length}`,
    );
  }
  let limit: number | undefined;
  if (values.limit !== undefined) {
    limit = Number(values.limit);
    if (!Number.isInteger(limit) || limit < 1)
      throw new UsageError(`--limit: expected a positive integer, got "${values.limit}"`);
  }
  const config = await clusterConfig(io.env);
  const topic = resolveTopic(positionals[0]!, config.TOPIC_PREFIX);
  const readerSchema = currentSchemaOf(config.TOPIC_PREFIX, topic);
  // Its records are stdout's; its log lines (debugging) go to stderr, so `tail … | jq` never reads one.
  const logger = stderrLogger(config.LOG_LEVEL, 'tail', process.stderr, 'fatal');
  const settings = kafkaSettings(config, 'hookledger-tail', logger);
  const serde = createSerde({ ...registryAccess(config), clientId: 'hookledger-tail' });

  const controller = new AbortController();
  const stop = () => controller.abort();
  io.signal?.addEventListener('abort', stop, { once: true });
  if (io.signal === undefined) process.once('SIGINT', stop);
  const fromBeginning = values['from-beginning'] ?? false;
  const catchUp = fromBeginning || startAt !== undefined;
  try {
    await tail(
      {
        topic,
        fromBeginning,
        // Without a start there is nothing to catch up with: only following can show anything.
        follow: (values.follow ?? false) || !catchUp,
        ...(startAt === undefined ? {} : { startAt }),
        ...(partitions === undefined ? {} : { partitions }),
        history: values.history ?? false,
        ...(values.key === undefined ? {} : { key: values.key }),
        ...(limit === undefined ? {} : { limit }),
        ...(readerSchema === undefined ? {} : { readerSchema }),
      },
      { settings, serde, write: (line) => io.stdout.write(`${line}\n`), signal: controller.signal },
    );
  } catch (error) {
    if (error instanceof UnknownTopicError) throw new CommandFailed(error.message);
    if (error instanceof RegistryUnavailableError)
      throw new CommandFailed(`schema registry at ${config.SCHEMA_REGISTRY_URL}: ${error.message}`);
    throw clusterFailure(error, config.KAFKA_BROKERS) ?? error;
  } finally {
    io.signal?.removeEventListener('abort', stop);
    if (io.signal === undefined) process.off('SIGINT', stop);
  }
  return 0;
}

export const command: Command = {
  help: HELP,
  async run(args) {
    // `hookledger tail … | head` closes the pipe: stop reading instead of failing on EPIPE.
    const controller = new AbortController();
    process.stdout.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EPIPE') controller.abort();
    });
    process.once('SIGINT', () => controller.abort());
    return runTail(args, { stdout: process.stdout, env: process.env, signal: controller.signal });
  },
};
