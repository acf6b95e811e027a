// The CLI entry: finds the subcommand, runs it, and turns its outcome into an exit code.
import { ConfigError } from '../../runtime/config.js';
import { type Command, UsageError } from './command.js';

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
};

function overview(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((name) => name.length));
  return [
    'usage: hookledger <command> [options]',
    '',
    'commands:',
    ...Object.entries(COMMANDS).map(([name, { summary }]) => `  ${name.padEnd(width)}  ${summary}`),
    '',
    'Run `hookledger <command> --help` for a command’s options, `hookledger --version` for the version.',
  ].join('\n');
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    console.log(overview());
    return 0;
  }
  if (name === '--version' || name === '-v' || name === 'version') {
    console.log((await import('./version.js')).VERSION);
    return 0;
  }
  const entry = COMMANDS[name];
  if (!entry) {
    console.error(`hookledger: unknown command "${name}"\n\n${overview()}`);
    return 2;
  }
  const { command } = await entry.load();
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
    console.error(`hookledger: ${error.message}`);
    process.exitCode = 2;
  } else if (error instanceof Error && 'userFacing' in error) {
    console.error(`hookledger: ${error.message}`);
    process.exitCode = 1;
  } else {
    console.error(error);
    process.exitCode = 1;
  }
}
