// The whole CLI as one function: finds the subcommand, runs it, and turns its outcome into an exit code.
// tools/cli/main.ts calls it with the process's arguments; tests call it in-process (a spawned node with
// tsx's loader costs a second or more per run on a busy machine), keeping a few real spawns for "one
// line, then exit".
import { ConfigError } from '../../runtime/config.js';
import { readConfigFile, takeConfigOption } from '../config/file.js';
import { type Command, CommandFailed, UsageError } from './command.js';

/**
 * Each command lives in its own module, loaded only when it runs (ingest does not load the stack);
 * the summary is what `hookledger --help` lists, in this order.
 */
const COMMANDS: Record<string, { summary: string; load: () => Promise<{ command: Command }> }> = {
  start: {
    summary: 'everything for local use: stack, topics, ingest, processors',
    load: () => import('./commands/start.js'),
  },
  ingest: {
    summary: 'the webhook receiver (POST /webhooks/<source>)',
    load: () => import('./commands/ingest.js'),
  },
  process: {
    summary: 'the processors: dedupe-router and tables',
    load: () => import('./commands/process.js'),
  },
  topics: {
    summary: 'create or verify the topics, register the schemas',
    load: () => import('./commands/topics.js'),
  },
  simulate: { summary: 'send webhooks as the platform does', load: () => import('./commands/simulate.js') },
  tail: { summary: "print a topic's records as JSON lines", load: () => import('./commands/tail.js') },
  replay: {
    summary: 'rebuild derived topics from webhooks.raw, side by side',
    load: () => import('./commands/replay.js'),
  },
  repartition: {
    summary: 'copy webhooks.raw into a new topic set with more partitions (docs/scaling.md)',
    load: () => import('./commands/repartition.js'),
  },
  redrive: {
    summary: 'send dead-lettered deliveries back through the router',
    load: () => import('./commands/redrive.js'),
  },
  quarantine: {
    summary: 'what a signed source refused (list), and sending it on once the key is fixed (promote)',
    load: () => import('./commands/quarantine.js'),
  },
  stack: {
    summary: 'a local Kafka and schema registry (up, down, status, …)',
    load: () => import('./commands/stack.js'),
  },
  config: {
    summary: 'validate the configuration (check), or show it with secrets redacted (print)',
    load: () => import('./commands/config.js'),
  },
};

function overview(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((name) => name.length));
  return [
    'usage: hookledger <command> [options]',
    '',
    'commands:',
    ...Object.entries(COMMANDS).map(([name, { summary }]) => `  ${name.padEnd(width)}  ${summary}`),
    '',
    'global options (before or after the command):',
    '  --config <file.yaml>  variables from a YAML file of the same names; the environment overrides it',
    '  --json                machine-readable output on stdout (topics, simulate, redrive,',
    '                        quarantine list, stack status, config check, config print,',
    '                        replay diff)',
    '',
    'Run `hookledger help <command>` (or `hookledger <command> --help`) for a command’s options,',
    '`hookledger --version` for the version. docs/cli.md has the exit codes and output shapes.',
  ].join('\n');
}

/**
 * The global options: `--config <file>` anywhere before a `--` (it becomes HOOKLEDGER_CONFIG_FILE, so
 * child processes read the same file), `--json` before the command (moved after its arguments, which
 * refuses it when it has no such output).
 */
function globalOptions(argv: string[]): string[] {
  const { args, file } = takeConfigOption(argv);
  if (file !== undefined) process.env.HOOKLEDGER_CONFIG_FILE = file;
  const leading: string[] = [];
  while (args[0] === '--json') leading.push(args.shift()!);
  if (args.length === 0) return leading;
  // After the subcommand's own words (`quarantine list`, `config check`): the command parses it there.
  return [...args, ...leading];
}

/** The configuration file's variables under the environment's, for every command but `config` (it shows origins). */
function applyConfigFile(command: string): void {
  const path = process.env.HOOKLEDGER_CONFIG_FILE;
  if (!path || command === 'config') return;
  const file = readConfigFile(path);
  for (const [name, value] of Object.entries(file))
    if (process.env[name] === undefined || process.env[name] === '') process.env[name] = value;
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = globalOptions(argv);
  if (name === 'help' && rest[0] !== undefined) {
    const entry = COMMANDS[rest[0]];
    if (!entry) {
      console.error(`hookledger: unknown command "${rest[0]}"\n\n${overview()}`);
      return 2;
    }
    const { command } = await entry.load();
    if (command.ownHelp) return command.run([...rest.slice(1), '--help']);
    console.log(command.help);
    return 0;
  }
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    console.log(overview());
    return 0;
  }
  if (name === '--version' || name === '-v' || name === 'version') {
    console.log((await import('../../runtime/version.js')).VERSION);
    return 0;
  }
  const entry = COMMANDS[name];
  if (!entry) {
    console.error(`hookledger: unknown command "${name}"\n\n${overview()}`);
    return 2;
  }
  applyConfigFile(name);
  const { command } = await entry.load();
  if (!command.ownHelp && (rest.includes('--help') || rest.includes('-h'))) {
    console.log(command.help);
    return 0;
  }
  return command.run(rest);
}

/** Runs the CLI with `argv` (the arguments after `hookledger`); resolves to the exit code. */
export async function runCli(argv: string[]): Promise<number> {
  try {
    return await main(argv);
  } catch (error) {
    // Expected failures get one clear line; anything else is a bug and keeps its stack.
    if (error instanceof ConfigError || error instanceof UsageError) {
      console.error(`hookledger: ${error.message}`);
      return 2;
    }
    if (error instanceof Error && 'userFacing' in error) {
      console.error(`hookledger: ${error.message}`);
      return error instanceof CommandFailed ? error.exitCode : 1;
    }
    console.error(error);
    return 1;
  }
}
