// A frozen process (`stack freeze`) is told apart from a live one, and still stops cleanly.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { pidAlive, pidFrozen, stopPid } from '../../../tools/stack/jvm-process.js';

async function until(check: () => boolean, timeoutMs = 5_000): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) return false;
    await sleep(10);
  }
  return true;
}

describe.runIf(existsSync('/proc/self/stat'))('a process stopped with SIGSTOP', () => {
  it('shows as frozen until SIGCONT, and stopPid ends it at once (not after the grace period)', async () => {
    const child = spawn('sleep', ['60'], { stdio: 'ignore' });
    const pid = child.pid!;
    try {
      expect(pidFrozen(pid)).toBe(false);
      process.kill(pid, 'SIGSTOP');
      expect(await until(() => pidFrozen(pid))).toBe(true);
      process.kill(pid, 'SIGCONT');
      expect(await until(() => !pidFrozen(pid))).toBe(true);

      process.kill(pid, 'SIGSTOP');
      expect(await until(() => pidFrozen(pid))).toBe(true);
      const started = Date.now();
      await stopPid(pid, 30_000);
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(pidAlive(pid)).toBe(false);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('is not frozen when it does not exist', () => {
    expect(pidFrozen(2 ** 22 + 1)).toBe(false);
  });
});
