// The CLI entry: finds the subcommand, runs it, and turns its outcome into an exit code.
import { ConfigError } from '../../runtime/config.js';
import { type Command, UsageError } from './command.js';

/** Each command lives in its own module, loaded only when it runs (ingest does not load the stack). */
const COMMANDS: Record<string, () => Promise<{ command: Command }>> = {
  ingest: () => import('./commands/ingest.js'),
  process: () => import('./commands/process.js'),
  redrive: () => import('./commands/redrive.js'),
  replay: () => import('./commands/replay.js'),
  start: () => import('./commands/start.js'),
  simulate: () => import('./commands/simulate.js'),
  stack: () => import('./commands/stack.js'),
  tail: () => import('./commands/tail.js'),
  topics: () => import('./commands/topics.js'),
};

function overview(): string {
  return [
    'usage: hookstream <command> [options]',
    '',
    'commands:',
    ...Object.keys(COMMANDS).map((name) => `  ${name}`),
    '',
    'Run `hookstream <command> --help` for a command’s options.',
  ].join('\n');
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    console.log(overview());
    return 0;
  }
  const load = COMMANDS[name];
  if (!load) {
    console.error(`hookstream: unknown command "${name}"\n\n${overview()}`);
    return 2;
  }
  const { command } = await load();
  if (!command.ownHelp && (rest.includes('--help') || rest.includes('-h'))) {
    console.log(command.help);
    return 0;
  }
  return command.run(rest);
}

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (error) {
  // Expected failures get one clear line; anything else is a bug and keeps its stack.
  if (error instanceof ConfigError || error instanceof UsageError) {
    console.error(`hookstream: ${error.message}`);
    process.exitCode = 2;
  } else if (error instanceof Error && 'userFacing' in error) {
    console.error(`hookstream: ${error.message}`);
    process.exitCode = 1;
  } else {
    console.error(error);
    process.exitCode = 1;
  }
}
