// Runs hookledger as a new user does: `npx hookledger …` typed into a new shell in a fresh directory of
// their own, where npx finds this checkout (no registry), `start` in a terminal of its own that Ctrl-C
// stops. For the README tour and start-again tests; nothing here fakes Kafka or the registry.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, readlink, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const BIN = resolve(import.meta.dirname, '../../tools/cli/hookledger.js');

/** Variables a person's new shell would not have: this test run's stack and settings. */
export const NOT_IN_A_NEW_SHELL = [
  'KAFKA_BROKERS',
  'SCHEMA_REGISTRY_URL',
  'HOOKLEDGER_LOCAL_STACK',
  'HOOKLEDGER_STATE_DIR',
  'HOOKLEDGER_SOURCES',
  'HOOKLEDGER_SOURCES_FILE',
  'TOPIC_PREFIX',
  'TOPIC_PARTITIONS',
  'INGEST_PORT',
  'INGEST_OPS_HOST',
  'INGEST_OPS_PORT',
  'PROCESSOR_PORT',
  'WEBHOOK_DATE_ZONE',
];

export interface UserDir {
  dir: string;
  /** The environment of a new shell there. */
  env: NodeJS.ProcessEnv;
  remove(): Promise<void>;
}

/**
 * A fresh directory where `npx hookledger` is this checkout: a package.json and
 * node_modules/.bin/hookledger linking to tools/cli/hookledger.js. npm runs offline against an
 * unreachable registry, so a command npx would fetch fails instead of using something else.
 */
export async function userDir(prefix: string, extra: NodeJS.ProcessEnv = {}): Promise<UserDir> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  await writeFile(join(dir, 'package.json'), '{ "name": "a-new-user", "private": true }\n');
  await mkdir(join(dir, 'node_modules', '.bin'), { recursive: true });
  await symlink(BIN, join(dir, 'node_modules', '.bin', 'hookledger'));
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of NOT_IN_A_NEW_SHELL) delete env[name];
  Object.assign(env, {
    npm_config_offline: 'true',
    npm_config_registry: 'http://127.0.0.1:9/',
    npm_config_update_notifier: 'false',
    ...extra,
  });
  return { dir, env, remove: () => rm(dir, { recursive: true, force: true }) };
}

export interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** A command line run through `bash -c` in the directory, as typed; resolves whatever its exit code. */
export function runInShell(command: string, user: UserDir, timeoutMs = 300_000): Promise<Ran> {
  return new Promise((done, fail) => {
    const child = spawn('bash', ['-c', command], { cwd: user.dir, env: user.env, detached: true });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    const timer = setTimeout(() => {
      killGroup(child, 'SIGKILL');
      fail(new Error(`\`${command}\` ran over ${timeoutMs / 1000} s\n${stdout}\n${stderr}`));
    }, timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      done({ code: code ?? 1, stdout, stderr });
    });
  });
}

/** How a process ended: its exit code, or the signal that ended it. */
export interface Ended {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** Whether a command stopped by Ctrl-C ended well: exit code 0, or the SIGINT itself (no error code). */
export function stoppedByCtrlC(ended: Ended): boolean {
  return ended.code === 0 || (ended.code === null && ended.signal === 'SIGINT');
}

/** A command left running in a terminal of its own (its own process group, as a shell's job). */
export interface Terminal {
  readonly child: ChildProcess;
  output(): string;
  /** Resolves with the output once `pattern` shows in it; rejects when the command ends first or on time. */
  waitFor(pattern: RegExp, timeoutMs: number): Promise<RegExpExecArray>;
  /**
   * Ctrl-C: SIGINT to the whole group; resolves once every process in it is gone, with how the shell
   * ended (bash running one command execs it, so it may end by the signal, as a terminal's job does).
   */
  interrupt(timeoutMs?: number): Promise<Ended>;
  /** SIGKILL to the group, for a cleanup after a failure. */
  kill(): void;
}

export function openTerminal(command: string, user: UserDir, env: NodeJS.ProcessEnv = {}): Terminal {
  const child = spawn('bash', ['-c', command], {
    cwd: user.dir,
    env: { ...user.env, ...env },
    detached: true,
  });
  let output = '';
  let exited: Ended | undefined;
  const append = (chunk: Buffer) => {
    output += chunk.toString('utf8');
  };
  child.stdout?.on('data', append);
  child.stderr?.on('data', append);
  const closed = new Promise<Ended>((resolveClosed) =>
    child.on('close', (code, signal) => {
      exited = { code, signal };
      resolveClosed(exited);
    }),
  );
  return {
    child,
    output: () => output,
    async waitFor(pattern, timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const match = pattern.exec(output);
        if (match) return match;
        if (exited !== undefined)
          throw new Error(
            `\`${command}\` ended (${exited.code ?? exited.signal}) before ${pattern}:\n${output}`,
          );
        if (Date.now() > deadline)
          throw new Error(`no ${pattern} from \`${command}\` in ${timeoutMs / 1000} s:\n${output}`);
        await sleep(200);
      }
    },
    async interrupt(timeoutMs = 120_000) {
      killGroup(child, 'SIGINT');
      const deadline = Date.now() + timeoutMs;
      const ended = await Promise.race([closed, sleep(timeoutMs).then(() => undefined)]);
      // The shell's exit is not the end: the group is gone once start and everything it ran are.
      while (groupAlive(child) && Date.now() < deadline) await sleep(200);
      if (ended === undefined || groupAlive(child))
        throw new Error(`\`${command}\` did not stop within ${timeoutMs / 1000} s of Ctrl-C:\n${output}`);
      return ended;
    },
    kill: () => killGroup(child, 'SIGKILL'),
  };
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // Already gone.
  }
}

function groupAlive(child: ChildProcess): boolean {
  if (child.pid === undefined) return false;
  try {
    process.kill(-child.pid, 0);
    return true;
  } catch {
    return false;
  }
}

export const sleep = (ms: number) => new Promise((resolveSleep) => setTimeout(resolveSleep, ms));

/**
 * Processes still running in or from the directory (their working directory or command line names it):
 * a JVM, a start or an npx left behind. Linux /proc; the test's own process is never one of them.
 */
export async function processesIn(dir: string): Promise<{ pid: number; command: string }[]> {
  const found: { pid: number; command: string }[] = [];
  for (const entry of await readdir('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      const command = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0').join(' ').trim();
      const cwd = await readlink(`/proc/${pid}/cwd`).catch(() => '');
      if (command.includes(dir) || cwd === dir || cwd.startsWith(`${dir}/`)) found.push({ pid, command });
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}

/** Kills what processesIn found (cleanup after a failure; a passing test leaves none). */
export function killAll(processes: readonly { pid: number }[]): void {
  for (const { pid } of processes) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
}

/** A port nothing listens on now, never the same twice in this process. */
export { freePort } from '../../tools/stack/ports.js';

/** Whether something accepts connections on host:port. */
export function listening(host: string, port: number): Promise<boolean> {
  return new Promise((done) => {
    const server = createServer();
    server.once('error', () => done(true));
    server.listen(port, host, () => server.close(() => done(false)));
  });
}

/**
 * After a test: a terminal still running gets Ctrl-C (SIGKILL if that fails), its stack's supervisors
 * get their time to stop the JVMs, then anything still running from the directory is killed and the
 * directory removed. Returns what had to be killed: a passing test leaves nothing.
 */
export async function cleanUp(user: UserDir, terminal: Terminal | undefined): Promise<string[]> {
  if (terminal !== undefined) await terminal.interrupt(120_000).catch(() => terminal.kill());
  let left = await processesIn(user.dir);
  for (const deadline = Date.now() + 30_000; left.length > 0 && Date.now() < deadline; ) {
    await sleep(1_000);
    left = await processesIn(user.dir);
  }
  killAll(left);
  await user.remove();
  return left.map((p) => p.command);
}
