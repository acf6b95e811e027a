// A frozen process (`stack freeze`) is told apart from a live one, and still stops cleanly.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { logProblems, pidAlive, pidFrozen, stopPid } from '../../../tools/stack/jvm-process.js';

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

describe('the log of a JVM that exited while starting', () => {
  it('is quoted by the lines that say what went wrong, which its shutdown lines follow', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookledger-jvm-log-'));
    try {
      const log = join(dir, 'kafka.log');
      writeFileSync(
        log,
        [
          '[2026-11-26 10:02:55,001] INFO Starting (kafka.server.KafkaRaftServer)',
          '[2026-11-26 10:02:56,100] ERROR Exiting Kafka due to fatal exception (kafka.Kafka$)',
          'org.apache.kafka.common.KafkaException: Socket server failed to bind to 127.0.0.1:35135: Address already in use.',
          '[2026-11-26 10:02:56,912] INFO Metrics reporters closed (org.apache.kafka.common.metrics.Metrics)',
        ].join('\n'),
      );
      expect(await logProblems(log)).toBe(
        [
          '[2026-11-26 10:02:56,100] ERROR Exiting Kafka due to fatal exception (kafka.Kafka$)',
          'org.apache.kafka.common.KafkaException: Socket server failed to bind to 127.0.0.1:35135: Address already in use.',
        ].join('\n'),
      );
      expect(await logProblems(join(dir, 'missing.log'))).toBe('');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
