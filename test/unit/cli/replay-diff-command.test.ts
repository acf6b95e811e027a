// `hookledger replay diff`: its own --help, and one line for a call without a replay (in-process), and the
// exit code of a diff that cannot run, as a user runs it (spawned).
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCliInProcess } from '../../helpers/cli-in-process.js';

/** A port no one listens on (the registry's out-of-reach URLs use it too). */
const NOTHING_LISTENS = 1;

const bin = path.resolve(import.meta.dirname, '../../../tools/cli/hookledger.js');
const run = (...args: string[]) => runCliInProcess(args);

describe('hookledger replay diff', { timeout: 60_000 }, () => {
  it('answers --help with its own usage, and replay --help names it', async () => {
    const diff = await run('replay', 'diff', '--help');
    expect(diff.status, diff.stderr).toBe(0);
    expect(diff.stdout).toMatch(/^usage: hookledger replay diff --id <id> \[--json\]/);
    const replay = await run('replay', '--help');
    expect(replay.status).toBe(0);
    expect(replay.stdout).toMatch(/^usage: hookledger replay \[options\]/);
    expect(replay.stdout).toContain('hookledger replay diff --id <id>');
  });

  it('refuses a call without --id with one line and exit code 2', async () => {
    const result = await run('replay', 'diff');
    expect(result.status).toBe(2);
    expect(result.stderr.trim()).toBe(
      'hookledger: replay diff: --id <id> is required (the replay to compare)',
    );
  });

  it('refuses an unknown option with one line', async () => {
    const result = await run('replay', 'diff', '--id', 'r1', '--colour');
    expect(result.status).toBe(2);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('exits 3, never 1 (differs), when the diff cannot run: Kafka out of reach', async () => {
    // Port 1: nothing listens there. A port freePort() found free could be taken meanwhile by a broker
    // another test file starts, and the command then reached a real Kafka (exit 1, seen once beside the
    // integration tests).
    const port = NOTHING_LISTENS;
    const result = spawnSync(process.execPath, [bin, 'replay', 'diff', '--id', 'r1'], {
      encoding: 'utf8',
      timeout: 30_000,
      env: { ...process.env, KAFKA_BROKERS: `127.0.0.1:${port}`, SCHEMA_REGISTRY_URL: 'http://127.0.0.1:1' },
    });
    expect(result.status).toBe(3);
    expect(result.stderr.trim()).toMatch(/^hookledger: Kafka at 127\.0\.0\.1:\d+ cannot be reached/);
  });
});
