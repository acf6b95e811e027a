// Starting one JVM with its output in a log file, knowing its pid, and stopping it (TERM, wait, KILL).
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { StackError } from './errors.js';

const SUPERVISOR = fileURLToPath(new URL('./supervise.js', import.meta.url));

/** How long a JVM gets for a clean shutdown before SIGKILL: Kafka's controlled shutdown takes a few seconds. */
export const DEFAULT_GRACE_MS = 15_000;

export interface JvmSpec {
  /** For messages: "Kafka", "the schema registry". */
  name: string;
  command: string;
  args: string[];
  cwd: string;
  logFile: string;
  pidFile: string;
  /**
   * false (tests, `hookledger start`): run under supervise.js, which stops the JVM when this process
   * ends in any way. true (`stack up`): the JVM outlives us; only its pid file tells where it is.
   */
  detached: boolean;
  graceMs?: number;
}

export interface RunningJvm {
  readonly name: string;
  /** The JVM's own pid (not the supervisor's). */
  readonly pid: number;
  readonly logFile: string;
  /** Settles when the JVM has exited (for a detached JVM started by another process: never observed). */
  readonly exited: Promise<void>;
  hasExited(): boolean;
  stop(): Promise<void>;
}

export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export function readPidFile(file: string): number | undefined {
  try {
    const pid = Number.parseInt(readFileSync(file, 'utf8').trim(), 10);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Whether `pid` is stopped by a signal (SIGSTOP): Linux's /proc state `T`; false where it cannot tell. */
export function pidFrozen(pid: number): boolean {
  try {
    // `pid (comm) S …`: the state follows the last `)`, since the command name may hold spaces or parens.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('T');
  } catch {
    return false;
  }
}

/**
 * Whether `pid` is alive and still the process we started: a pid from an old pid file may have been
 * reused by anything since. On Linux its command line must mention `marker` (its config path).
 */
export function pidIsOurs(pid: number, marker: string): boolean {
  if (!pidAlive(pid)) return false;
  const cmdline = `/proc/${pid}/cmdline`;
  if (!existsSync('/proc/self/cmdline')) return true; // no procfs (macOS): trust the pid file
  try {
    return readFileSync(cmdline, 'utf8').includes(marker);
  } catch {
    return false;
  }
}

/** Polls until `pid` is gone; true if it went within `timeoutMs`. */
export async function waitForPidExit(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (pidAlive(pid)) {
    if (Date.now() > deadline) return false;
    await sleep(100);
  }
  return true;
}

/** Stops a process we only know by pid: SIGTERM, up to `graceMs`, then SIGKILL. */
export async function stopPid(pid: number, graceMs = DEFAULT_GRACE_MS): Promise<void> {
  if (!signal(pid, 'SIGTERM')) return;
  // A frozen process (`stack freeze`) takes the SIGTERM only once woken.
  signal(pid, 'SIGCONT');
  if (await waitForPidExit(pid, graceMs)) return;
  signal(pid, 'SIGKILL');
  await waitForPidExit(pid, 5_000);
}

function signal(pid: number, name: NodeJS.Signals): boolean {
  try {
    process.kill(pid, name);
    return true;
  } catch {
    return false;
  }
}

/** The last lines of a log file, for error messages that should explain themselves. */
export async function logTail(file: string, lines = 15): Promise<string> {
  try {
    const text = await readFile(file, 'utf8');
    return text.trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

/**
 * The first lines of a log that say what went wrong (ERROR, FATAL, an exception): a JVM that exits on
 * its own writes its shutdown after the reason, so the last lines alone often do not show it.
 */
export async function logProblems(file: string, lines = 3): Promise<string> {
  try {
    const text = await readFile(file, 'utf8');
    return text
      .split('\n')
      .filter((line) => /\b(ERROR|FATAL)\b|Exception\b/.test(line))
      .slice(0, lines)
      .join('\n');
  } catch {
    return '';
  }
}

/**
 * The error for a JVM that did not become ready: stops it first (nothing left behind), then names the
 * log file and quotes what it says went wrong and its last lines.
 */
export async function notReadyError(
  jvm: RunningJvm,
  outcome: 'exited' | 'timeout',
  what: string,
  logFile: string,
): Promise<StackError> {
  await jvm.stop();
  const problems = await logProblems(logFile);
  const tail = await logTail(logFile, 5);
  const happened = outcome === 'exited' ? 'exited while starting' : 'did not answer in time';
  const quoted = [problems, tail].filter(Boolean).join('\n…\n');
  return new StackError(`${what} ${happened}: see ${logFile}${quoted ? `\n${quoted}` : ''}`);
}

export async function launchJvm(spec: JvmSpec): Promise<RunningJvm> {
  await mkdir(dirname(spec.logFile), { recursive: true });
  await mkdir(dirname(spec.pidFile), { recursive: true });
  rmSync(spec.pidFile, { force: true });
  // Appending, so a restart keeps the previous run's lines above the new ones.
  const log = openSync(spec.logFile, 'a');
  try {
    return spec.detached ? launchDetached(spec, log) : await launchSupervised(spec, log);
  } finally {
    closeSync(log); // the child holds its own copy of the descriptor
  }
}

function launchDetached(spec: JvmSpec, log: number): RunningJvm {
  const child = spawn(spec.command, spec.args, {
    cwd: spec.cwd,
    detached: true, // own session: a Ctrl-C in this terminal later must not reach it
    stdio: ['ignore', log, log],
  });
  if (child.pid === undefined) throw new Error(`could not start ${spec.name} (${spec.command})`);
  child.unref();
  writeFileSync(spec.pidFile, `${child.pid}\n`);
  const pid = child.pid;
  const exited = exitOf(child);
  let gone = false;
  void exited.then(() => {
    gone = true;
  });
  return {
    name: spec.name,
    pid,
    logFile: spec.logFile,
    exited,
    hasExited: () => gone,
    async stop() {
      await stopPid(pid, spec.graceMs ?? DEFAULT_GRACE_MS);
      rmSync(spec.pidFile, { force: true });
    },
  };
}

async function launchSupervised(spec: JvmSpec, log: number): Promise<RunningJvm> {
  const graceMs = spec.graceMs ?? DEFAULT_GRACE_MS;
  const supervisor = spawn(
    process.execPath,
    [SUPERVISOR, spec.pidFile, String(graceMs), spec.command, ...spec.args],
    {
      cwd: spec.cwd,
      // Own process group: a Ctrl-C goes to us alone, and we stop the JVMs in order (registry first).
      detached: true,
      stdio: ['pipe', log, log],
    },
  );
  const exited = exitOf(supervisor);
  let gone = false;
  void exited.then(() => {
    gone = true;
  });
  // The supervisor writes the JVM's pid as soon as it has spawned it.
  const deadline = Date.now() + 10_000;
  let pid = readPidFile(spec.pidFile);
  while (pid === undefined && !gone && Date.now() < deadline) {
    await sleep(20);
    pid = readPidFile(spec.pidFile);
  }
  if (pid === undefined) {
    supervisor.kill('SIGKILL');
    throw new Error(`could not start ${spec.name}: ${(await logTail(spec.logFile, 3)) || 'no pid reported'}`);
  }
  const jvmPid = pid;
  return {
    name: spec.name,
    pid: jvmPid,
    logFile: spec.logFile,
    exited,
    hasExited: () => gone,
    async stop() {
      if (gone) return;
      supervisor.stdin?.end(); // EOF: the supervisor's cue to stop the JVM
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), graceMs + 5_000);
      });
      const outcome = await Promise.race([exited.then(() => 'exited' as const), timeout]);
      clearTimeout(timer);
      if (outcome === 'timeout') {
        // The supervisor itself is stuck: end the whole group, JVM included.
        signalGroup(supervisor, 'SIGKILL');
        signal(jvmPid, 'SIGKILL');
        await waitForPidExit(jvmPid, 5_000);
      }
    },
  };
}

function signalGroup(child: ChildProcess, name: NodeJS.Signals): void {
  if (child.pid !== undefined) signal(-child.pid, name);
}

function exitOf(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    child.once('exit', () => resolve());
    child.once('error', () => resolve());
  });
}
