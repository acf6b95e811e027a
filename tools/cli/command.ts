// What every CLI subcommand provides, and the small helpers they share for their arguments.
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { exitProcess } from '../../runtime/exit.js';
import { isClusterError } from '../../runtime/kafka/admin.js';
import { unansweredKafkaCalls } from '../../runtime/kafka/rdkafka.js';
import { createLogger, type Logger } from '../../runtime/log.js';

export interface Command {
  /** Shown for `hookledger <command> --help`: usage line, then one line per option. */
  help: string;
  /** The command answers `--help` itself (it has subcommands, or passes arguments on to another program). */
  ownHelp?: boolean;
  /** Runs the command; resolves to the process exit code. */
  run(args: string[]): Promise<number>;
}

/** The connection variables every command that reaches Kafka or the registry reads, for its --help. */
export const CONNECTION_HELP = `secured cluster and registry: KAFKA_SECURITY_PROTOCOL, KAFKA_SASL_MECHANISM, KAFKA_SASL_USERNAME,
KAFKA_SASL_PASSWORD, KAFKA_SASL_OAUTHBEARER_*, KAFKA_SSL_CA_FILE, KAFKA_SSL_CERT_FILE, KAFKA_SSL_KEY_FILE,
KAFKA_SSL_KEY_PASSWORD, KAFKA_CONFIG_FILE, SCHEMA_REGISTRY_USERNAME, SCHEMA_REGISTRY_PASSWORD,
SCHEMA_REGISTRY_BEARER_TOKEN, SCHEMA_REGISTRY_CA_FILE; secrets also as <NAME>_FILE (docs/production.md: "Connecting
to a production cluster")`;

/** A mistake in how the command was called: printed as one line, exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** An expected failure the user can act on (a stack that will not start, a topic in conflict): one line, exit 1. */
export class CommandFailed extends Error {
  override name = 'CommandFailed';
  readonly userFacing = true;
  /** 1 unless a command documents otherwise (`replay diff` and `topics --check` fail with 3: 1 means "differs"). */
  readonly exitCode: number;

  constructor(message: string, options: ErrorOptions & { exitCode?: number } = {}) {
    super(message, options);
    this.exitCode = options.exitCode ?? 1;
  }
}

/** node:util parseArgs, with its errors turned into UsageErrors. */
export function parseOptions<T extends NonNullable<ParseArgsConfig['options']>>(
  args: string[],
  options: T,
  allowPositionals = false,
) {
  try {
    return parseArgs({ args, options, allowPositionals, strict: true });
  } catch (error) {
    // One line, as every usage error: parseArgs explains an "ambiguous" value (`--count -1`) in three.
    throw new UsageError((error as Error).message.split('\n').join(' '));
  }
}

/**
 * After a command has closed everything it opened: a handle a client library leaves open must not keep
 * the process alive. If it is still running after `graceMs`, the lingering handles are named and it exits
 * with the exit code the command returned (process.exitCode, set by main.ts), or is killed if a native
 * call keeps even that exit from finishing (runtime/exit.ts).
 */
export function exitIfStillRunning(warn: (message: string) => void, graceMs = 5_000): void {
  setTimeout(() => {
    const handles = process.getActiveResourcesInfo().join(', ');
    // A native call in the thread pool is no handle: named apart, it is what can hold even the exit.
    const calls = unansweredKafkaCalls();
    const waiting = calls.length === 0 ? '' : `; Kafka calls unanswered: ${calls.join(', ')}`;
    warn(`still running ${graceMs} ms after a clean close (${handles}${waiting}); exiting`);
    exitProcess();
  }, graceMs).unref();
}

/**
 * Runs a command that stops by itself on Ctrl-C: SIGINT or SIGTERM aborts the signal it is given (once:
 * a second Ctrl-C kills the process as usual), and the handlers are removed when it ends.
 */
export async function untilStopSignal(run: (signal: AbortSignal) => Promise<number>): Promise<number> {
  const controller = new AbortController();
  const stop = () => controller.abort(new Error('interrupted'));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    return await run(controller.signal);
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
}

/** A failure to reach or use Kafka, as the one line the user sees; undefined for any other error. */
export function clusterFailure(error: unknown, brokers: readonly string[]): CommandFailed | undefined {
  if (!isClusterError(error)) return undefined;
  return new CommandFailed(`Kafka at ${brokers.join(',')}: ${(error as Error).message}`);
}

/**
 * The logger of a command whose data goes to stdout: its lines go to stderr with the progress and the
 * warnings (docs/cli.md), so an error logged meanwhile cannot corrupt `--json` output. Errors only,
 * unless LOG_LEVEL asks for debug or trace.
 */
export function stderrLogger(
  logLevel: string,
  name: string,
  stderr: { write(text: string): unknown } = process.stderr,
  /** What it still shows below debug: errors, or only what ends the command. */
  quietLevel: 'error' | 'fatal' = 'error',
): Logger {
  const verbose = logLevel === 'debug' || logLevel === 'trace';
  return createLogger({ level: verbose ? logLevel : quietLevel, name, destination: stderr });
}
