import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { pidAlive, readPidFile, waitForPidExit } from '../../../tools/stack/jvm-process.js';

const SUPERVISOR = fileURLToPath(new URL('../../../tools/stack/supervise.js', import.meta.url));
/** Stands in for a JVM: runs until killed, optionally ignoring SIGTERM. */
const stubborn = (ignoreTerm: boolean) => [
  process.execPath,
  '-e',
  `${ignoreTerm ? "process.on('SIGTERM', () => {});" : ''} setInterval(() => {}, 1000);`,
];

const started: ChildProcess[] = [];
let dir: string;

async function pidFrom(file: string): Promise<number> {
  for (let i = 0; i < 100; i++) {
    const pid = readPidFile(file);
    if (pid !== undefined) return pid;
    await sleep(50);
  }
  throw new Error('the supervisor wrote no pid file');
}

afterEach(() => {
  for (const child of started.splice(0)) child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

describe('the supervisor', () => {
  it('stops its process when the owner dies by SIGKILL (EOF on its stdin)', async () => {
    dir = mkdtempSync(join(tmpdir(), 'hookledger-supervise-'));
    const pidFile = join(dir, 'child.pid');
    // The owner: a process holding the supervisor's stdin, about to be killed without a chance to clean up.
    const owner = spawn(
      process.execPath,
      [
        '-e',
        `require('node:child_process').spawn(process.execPath, ${JSON.stringify([SUPERVISOR, pidFile, '5000', ...stubborn(false)])}, { stdio: ['pipe', 'inherit', 'inherit'], detached: true }); setInterval(() => {}, 1000);`,
      ],
      { stdio: 'inherit' },
    );
    started.push(owner);
    const pid = await pidFrom(pidFile);
    expect(pidAlive(pid)).toBe(true);

    owner.kill('SIGKILL');

    expect(await waitForPidExit(pid, 5_000)).toBe(true);
  });

  it('kills a process that ignores SIGTERM once the grace period is over', async () => {
    dir = mkdtempSync(join(tmpdir(), 'hookledger-supervise-'));
    const pidFile = join(dir, 'child.pid');
    const supervisor = spawn(process.execPath, [SUPERVISOR, pidFile, '300', ...stubborn(true)], {
      stdio: ['pipe', 'inherit', 'inherit'],
    });
    started.push(supervisor);
    const pid = await pidFrom(pidFile);
    const exited = new Promise((resolve) => supervisor.once('exit', resolve));

    supervisor.stdin.end();

    expect(await waitForPidExit(pid, 5_000)).toBe(true);
    await exited;
    expect(readPidFile(pidFile)).toBeUndefined();
  });
});
