// What a person sees from `hookledger start` through a 300-webhook run: a short block and a status
// line, the services' logs in a file, no key of theirs printed, and Ctrl-C stopping everything.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../tools/stack/ports.js';
import { testStack } from '../helpers/stack.js';

const repoRoot = path.resolve(import.meta.dirname, '../..');
const bin = path.join(repoRoot, 'tools/cli/hookledger.js');
const KEY = `tour-key-${randomBytes(16).toString('hex')}`;

async function until(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`${what} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('hookledger start, as a person sees it', () => {
  const stack = testStack();
  let child: ChildProcess | undefined;
  let stateDir: string | undefined;

  afterAll(async () => {
    if (child && child.exitCode === null) child.kill('SIGKILL');
    if (stateDir) await rm(stateDir, { recursive: true, force: true });
  });

  it('prints at most 15 lines through a 300-webhook run, logs to a file, and stops on Ctrl-C', async () => {
    stateDir = await mkdtemp(path.join(tmpdir(), 'hookledger-start-'));
    const ingestPort = await freePort();
    const processorPort = await freePort();
    child = spawn(process.execPath, [bin, 'start', '--state-dir', stateDir, '--port', String(ingestPort)], {
      cwd: repoRoot,
      env: {
        ...process.env,
        KAFKA_BROKERS: stack.brokers.join(','),
        SCHEMA_REGISTRY_URL: stack.registryUrl,
        TOPIC_PREFIX: `it-start-${randomBytes(4).toString('hex')}.`,
        HOOKLEDGER_SOURCES: JSON.stringify({ tour: { keys: { k1: KEY } } }),
        HOOKLEDGER_INSTANCE_ID: `it-${randomBytes(4).toString('hex')}`,
        PROCESSOR_PORT: String(processorPort),
        INGEST_OPS_PORT: String(await freePort()),
        LOG_LEVEL: 'info',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d: Buffer) => {
      stdout += d.toString('utf8');
    });
    child.stderr!.on('data', (d: Buffer) => {
      stderr += d.toString('utf8');
    });
    const exited = new Promise<number | null>((resolve) => child!.once('exit', (code) => resolve(code)));
    await until(
      () => stdout.includes('Ctrl-C stops everything') || child!.exitCode !== null,
      150_000,
      'ready',
    );
    expect(stderr).toBe('');
    expect(stdout).toContain(`POST http://127.0.0.1:${ingestPort}/webhooks/tour`);
    expect(stdout).toContain("your sources' own (HOOKLEDGER_SOURCES)");
    expect(stdout).not.toContain(KEY);

    const simulate = spawn(
      process.execPath,
      [
        bin,
        'simulate',
        '--url',
        `http://127.0.0.1:${ingestPort}/webhooks/tour`,
        '--key',
        KEY,
        '--count',
        '300',
        '--rate',
        'unlimited',
        '--duplicate-rate',
        '0.2',
        '--seed',
        'start-output',
      ],
      { cwd: repoRoot, stdio: ['ignore', 'ignore', 'ignore'] },
    );
    expect(await new Promise((resolve) => simulate.once('exit', resolve))).toBe(0);
    // Not a terminal: a plain status line at most every 10 s, once the counts changed.
    await until(
      () => / routed 300 · duplicates 60 · dead-lettered 0 · lag 0$/m.test(stdout),
      90_000,
      'all routed',
    );
    expect(stdout).toMatch(/ received 360 · stored 360 · routed 300 /);

    const lines = stdout.split('\n').filter(Boolean);
    expect(lines.length, stdout).toBeLessThanOrEqual(15);
    expect(lines.filter((l) => l.startsWith('{'))).toEqual([]);

    const log = await readFile(path.join(stateDir, 'logs', 'hookledger.log'), 'utf8');
    const entries = log
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { msg: string; byStatus?: Record<string, number> });
    const answered = entries.filter((e) => e.msg === 'requests answered');
    expect(answered.reduce((sum, e) => sum + (e.byStatus?.['200'] ?? 0), 0)).toBe(360);
    expect(entries.some((e) => e.msg === 'stored')).toBe(false);
    expect(log).not.toContain(KEY);

    child.kill('SIGINT');
    const code = await Promise.race([
      exited,
      new Promise((r) => setTimeout(() => r('still running'), 30_000)),
    ]);
    expect(code).toBe(0);
    expect(stderr).toBe('');
    for (const port of [ingestPort, processorPort]) {
      const server = createServer();
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, resolve);
      });
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
