// What every CLI subcommand provides, and the small helpers they share for their arguments.
import { type ParseArgsConfig, parseArgs } from 'node:util';

export interface Command {
  /** Shown for `hookstream <command> --help`: usage line, then one line per option. */
  help: string;
  /** The command answers `--help` itself (it has subcommands, or passes arguments on to another program). */
  ownHelp?: boolean;
  /** Runs the command; resolves to the process exit code. */
  run(args: string[]): Promise<number>;
}

/** A mistake in how the command was called: printed as one line, exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** An expected failure the user can act on (a stack that will not start, a topic in conflict): one line, exit 1. */
export class CommandFailed extends Error {
  override name = 'CommandFailed';
  readonly userFacing = true;
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
    throw new UsageError((error as Error).message);
  }
}
