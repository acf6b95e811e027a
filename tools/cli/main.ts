// The `hookledger` process: the CLI (run-cli.ts) with this process's arguments; its result is the exit code.
import { runCli } from './run-cli.js';

process.exitCode = await runCli(process.argv.slice(2));
