// What the benchmarks share about the services they start: free ports, hookledger commands as child
// processes with their output in a file, readiness, and a bounded stop.
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { createServer } from 'node:net';
import { constants } from 'node:os';
import { join } from 'node:path';

export const ROOT = new URL('../../', import.meta.url).pathname;

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Waits for `<url>/readyz` to answer 200. */
export async function waitReady(url: string, timeoutMs = 60_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const status = await fetch(`${url}/readyz`)
      .then((r) => r.status)
      .catch(() => 0);
    if (status === 200) return;
    if (Date.now() > end) throw new Error(`${url} not ready within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** SIGTERM, then SIGKILL after 15 s. */
export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await Promise.race([exited, new Promise((r) => setTimeout(r, 15_000))]);
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}

const running = new Set<ChildProcess>();
const killRunning = () => {
  for (const child of running) child.kill('SIGKILL');
};
// A benchmark that dies of an uncaught error must not leave its services running.
process.once('exit', killRunning);
// Nor one stopped by a signal sent to it alone (pkill, a timeout): Node would exit without 'exit' events.
// (Ctrl-C reaches the children too: they share the terminal's process group.)
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => {
    killRunning();
    process.exit(128 + constants.signals[signal]);
  });

/**
 * `hookledger <args>` as a child process, its output straight into `logFile`: relaying a line per
 * request through the benchmark's own process would tax the load generator. Killed if this process exits.
 */
export function spawnHookledger(
  args: string[],
  env: NodeJS.ProcessEnv,
  logFile: string,
  nodeFlags: readonly string[] = [],
): ChildProcess {
  const output = openSync(logFile, 'w');
  const child = spawn(process.execPath, [...nodeFlags, join(ROOT, 'tools/cli/hookledger.js'), ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', output, output],
  });
  closeSync(output);
  return killedWithUs(child);
}

/** Kills the child if this process exits or is stopped by a signal (what spawnHookledger's children get). */
export function killedWithUs(child: ChildProcess): ChildProcess {
  running.add(child);
  child.once('exit', () => running.delete(child));
  return child;
}

/** Runs a hookledger command to its end; rejects with its exit code and log file. */
export async function runHookledger(args: string[], env: NodeJS.ProcessEnv, logFile: string): Promise<void> {
  const child = spawnHookledger(args, env, logFile);
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`hookledger ${args.join(' ')} exited ${code} (see ${logFile})`);
}

/** `hookledger stack kafka-tool <tool> <args>` to its end (its stderr on ours); resolves to its stdout. */
export async function kafkaToolOutput(tool: string, args: string[]): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [join(ROOT, 'tools/cli/hookledger.js'), 'stack', 'kafka-tool', tool, ...args],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let text = '';
    child.stdout!.on('data', (chunk) => {
      text += chunk;
    });
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve(text) : reject(new Error(`${tool} exited ${code}: ${text}`)),
    );
  });
}
