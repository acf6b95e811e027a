// The CLI run inside the test's process: what a person would see on stdout and stderr, and the exit code.
// For behaviour tests of the CLI's words (help, usage errors, refusals); a few tests still spawn the real
// `hookledger` to show the process itself prints one line and exits.
import { format } from 'node:util';
import { runCli } from '../../tools/cli/run-cli.js';

export interface CliResult {
  status: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `hookledger <args>` in-process. `env` is applied for the run (undefined removes a variable) and
 * put back after it, as is everything the CLI itself sets in process.env (`--config` does).
 */
export async function runCliInProcess(
  args: string[],
  env: Record<string, string | undefined> = {},
): Promise<CliResult> {
  const savedEnv = { ...process.env };
  const saved = {
    log: console.log,
    error: console.error,
    warn: console.warn,
    info: console.info,
    stdoutWrite: process.stdout.write,
    stderrWrite: process.stderr.write,
  };
  let stdout = '';
  let stderr = '';
  const toStdout = (...parts: unknown[]) => {
    stdout += `${format(...parts)}\n`;
  };
  const toStderr = (...parts: unknown[]) => {
    stderr += `${format(...parts)}\n`;
  };
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  console.log = toStdout;
  console.info = toStdout;
  console.error = toStderr;
  console.warn = toStderr;
  process.stdout.write = ((chunk: string | Uint8Array) => {
    stdout += String(chunk);
    return true;
  }) as typeof process.stdout.write;
  process.stderr.write = ((chunk: string | Uint8Array) => {
    stderr += String(chunk);
    return true;
  }) as typeof process.stderr.write;
  try {
    const status = await runCli(args);
    return { status, stdout, stderr };
  } finally {
    console.log = saved.log;
    console.info = saved.info;
    console.error = saved.error;
    console.warn = saved.warn;
    process.stdout.write = saved.stdoutWrite;
    process.stderr.write = saved.stderrWrite;
    for (const name of Object.keys(process.env)) if (!(name in savedEnv)) delete process.env[name];
    Object.assign(process.env, savedEnv);
  }
}
