// Every command a person can type answers --help with its usage and exit code 0. The CLI runs in-process
// (runCli); the process a user starts is spawned for the overview, an unknown command and a bad variable.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCliInProcess } from '../../helpers/cli-in-process.js';

const bin = path.resolve(import.meta.dirname, '../../../tools/cli/hookledger.js');
// Each spawn starts node with tsx's loader: seconds on a busy machine, beyond vitest's default 5 s.
const SPAWN_TIMEOUT_MS = 30_000;
const spawned = (...args: string[]) =>
  spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8', timeout: SPAWN_TIMEOUT_MS });
const run = (...args: string[]) => runCliInProcess(args);

const overview = spawned('--help');
const commands = [...overview.stdout.matchAll(/^ {2}(\w[\w-]*) {2,}/gm)].map((m) => m[1]!);

// In-process too, a command's first run imports its modules: seconds on a busy machine.
describe('the hookledger command', { timeout: SPAWN_TIMEOUT_MS }, () => {
  it('lists its commands with a summary each', () => {
    expect(overview.status).toBe(0);
    expect(commands).toEqual(
      expect.arrayContaining([
        'start',
        'ingest',
        'process',
        'topics',
        'simulate',
        'tail',
        'replay',
        'redrive',
        'stack',
      ]),
    );
  });

  it('prints the same overview in-process as the spawned command', async () => {
    const inProcess = await run('--help');
    expect(inProcess).toEqual({ status: 0, stdout: overview.stdout, stderr: '' });
  });

  it.each(commands)('%s --help prints its usage and exits 0', async (name) => {
    const result = await run(name, '--help');
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toMatch(new RegExp(`^usage: hookledger ${name}\\b`));
  });

  it('names every command whose --help offers --json among those that take it', async () => {
    const jsonLine = /^ {2}--json\s+([\s\S]*?)\n\n/m.exec(overview.stdout)![1]!;
    for (const name of commands) {
      const help = await run(name, '--help');
      if (help.stdout.includes('--json')) expect(jsonLine, name).toMatch(new RegExp(`\\b${name}\\b`));
    }
  });

  it('help <command> shows that command’s help, and a subcommand’s', async () => {
    const help = await run('help', 'tail');
    expect(help.stdout).toBe((await run('tail', '--help')).stdout);
    expect(help.status).toBe(0);
    expect((await run('help', 'quarantine', 'list')).stdout).toMatch(/^usage: hookledger quarantine list\b/);
    expect((await run('help', 'config', 'check')).stdout).toMatch(/^usage: hookledger config check\b/);
    const unknown = await run('help', 'frobnicate');
    expect(unknown.status).toBe(2);
    expect(unknown.stderr.split('\n')[0]).toBe('hookledger: unknown command "frobnicate"');
  });

  it('blames a bad start option on the option, in one line, before anything starts', async () => {
    for (const [option, value] of [
      ['--port', 'abc'],
      ['--partitions', '0'],
    ] as const) {
      const result = await run('start', option, value, '--state-dir', '/nonexistent/hookledger-state');
      expect(result.status).toBe(2);
      expect(result.stderr.trim()).toBe(`hookledger: ${option}: expected a positive integer, got "${value}"`);
    }
    // Nothing written first (the development source's file), and a port out of range named as the option's.
    const stateDir = mkdtempSync(path.join(tmpdir(), 'hookledger-start-'));
    try {
      const result = await run('start', '--port', '999999', '--state-dir', stateDir);
      expect(result.status).toBe(2);
      expect(result.stderr.trim()).toBe('hookledger: --port: expected a port from 1 to 65535, got 999999');
      expect(readdirSync(stateDir)).toEqual([]);
    } finally {
      rmSync(stateDir, { recursive: true, force: true });
    }
  });

  it(
    'refuses an unknown command with one line and exit code 2',
    () => {
      const result = spawned('frobnicate');
      expect(result.status).toBe(2);
      expect(result.stderr.split('\n')[0]).toBe('hookledger: unknown command "frobnicate"');
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'names a bad variable in one line and exits 2',
    () => {
      const result = spawnSync(process.execPath, [bin, 'ingest'], {
        encoding: 'utf8',
        timeout: SPAWN_TIMEOUT_MS,
        env: { ...process.env, KAFKA_BROKERS: 'not-a-broker', SCHEMA_REGISTRY_URL: 'http://127.0.0.1:1' },
      });
      expect(result.status).toBe(2);
      expect(result.stderr.trim()).toBe(
        'hookledger: KAFKA_BROKERS: expected host:port[,host:port…] (got "not-a-broker")',
      );
    },
    SPAWN_TIMEOUT_MS,
  );
});
