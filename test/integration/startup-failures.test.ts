// Every start-up failure of `start`, `ingest` and `process` is one line on stderr, then exit, with
// nothing left running, and every other command that talks to Kafka says an unreachable one alike: the
// real CLI as a child process, against the real broker and registry.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// Never the same port twice in this process (INGEST_PORT and INGEST_OPS_PORT once came out equal).
import { freePort } from '../../tools/stack/ports.js';
import { testStack } from '../helpers/stack.js';

const repoRoot = path.resolve(import.meta.dirname, '../..');
const bin = path.join(repoRoot, 'tools/cli/hookledger.js');
const SOURCES = JSON.stringify({ it: { keys: { k1: 'startup-failures-key-0123456789abcdef0123456789' } } });
/**
 * "Promptly": the CLI loads its TypeScript through tsx, which alone takes seconds on a loaded
 * two-core machine; a failure that waited on a client's retries or timeouts would take far longer.
 */
const PROMPTLY_MS = 20_000;

interface Outcome {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** The environment of a child: the test process's, with `extra` over it (undefined removes a variable). */
function environment(extra: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'info', ...extra };
  for (const [name, value] of Object.entries(env)) if (value === undefined) delete env[name];
  return env;
}

function launch(args: readonly string[], extra: Record<string, string | undefined>): ChildProcess {
  return spawn(process.execPath, [bin, ...args], {
    cwd: repoRoot,
    env: environment(extra),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Runs the CLI to its end (killed after `timeoutMs`, which fails the test). */
function hookledger(args: readonly string[], extra: Record<string, string | undefined>, timeoutMs = 90_000) {
  const began = Date.now();
  const child = launch(args, extra);
  return finished(child, began, timeoutMs);
}

function finished(child: ChildProcess, began: number, timeoutMs = 90_000): Promise<Outcome> {
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => {
    stdout += d.toString('utf8');
  });
  child.stderr!.on('data', (d: Buffer) => {
    stderr += d.toString('utf8');
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  return new Promise((resolve) => {
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, ms: Date.now() - began });
    });
  });
}

/** Exactly one line on stderr, `hookledger: …`, and its text. */
function oneLine(outcome: Outcome): string {
  const lines = outcome.stderr.split('\n').filter(Boolean);
  expect(lines, outcome.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(/^hookledger: /);
  return lines[0]!;
}

/** A port held by this test process (on every address, like a service listening on 0.0.0.0). */
async function holdPort(): Promise<{ port: number; server: Server }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, resolve));
  return { port: (server.address() as { port: number }).port, server };
}

/** Whether something listens on the port (connects within a second). */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    const done = (open: boolean) => {
      socket.destroy();
      resolve(open);
    };
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
    setTimeout(() => done(false), 1_000).unref();
  });
}

/** Whether the URL answers 200 (an HTTP server, not only a bound port). */
async function answers(url: string): Promise<boolean> {
  const response = await fetch(url, { signal: AbortSignal.timeout(1_000) }).catch(() => undefined);
  return response?.status === 200;
}

describe('a start-up failure is one line, then exit, with nothing left running', () => {
  const stack = testStack();
  const prefix = `it-startup-${randomBytes(4).toString('hex')}.`;
  let held: { port: number; server: Server };
  let stateDir: string;
  /** A port nothing listens on: a broker or registry that is not there. */
  let closed: number;

  beforeAll(async () => {
    held = await holdPort();
    closed = await freePort();
    stateDir = await mkdtemp(path.join(tmpdir(), 'hookledger-startup-'));
  });

  afterAll(async () => {
    await new Promise((resolve) => held?.server.close(resolve));
    await rm(stateDir, { recursive: true, force: true });
  });

  /** The variables of a run against the shared stack, on ports of its own. */
  const base = async (extra: Record<string, string | undefined> = {}) => ({
    KAFKA_BROKERS: stack.brokers.join(','),
    SCHEMA_REGISTRY_URL: stack.registryUrl,
    TOPIC_PREFIX: prefix,
    HOOKLEDGER_SOURCES: SOURCES,
    HOOKLEDGER_INSTANCE_ID: `it-${randomBytes(4).toString('hex')}`,
    INGEST_PORT: String(await freePort()),
    INGEST_OPS_PORT: String(await freePort()),
    PROCESSOR_PORT: String(await freePort()),
    ...extra,
  });

  it('ingest names its port and INGEST_PORT when the port is in use', async () => {
    const outcome = await hookledger(['ingest'], await base({ INGEST_PORT: String(held.port) }));
    expect(oneLine(outcome)).toBe(`hookledger: port ${held.port} is in use (INGEST_PORT)`);
    expect(outcome.code).toBe(1);
    expect(outcome.ms).toBeLessThan(PROMPTLY_MS);
  });

  it('process names its port and PROCESSOR_PORT when the port is in use', async () => {
    const outcome = await hookledger(['process'], await base({ PROCESSOR_PORT: String(held.port) }));
    expect(oneLine(outcome)).toBe(`hookledger: port ${held.port} is in use (PROCESSOR_PORT)`);
    expect(outcome.code).toBe(1);
    expect(outcome.ms).toBeLessThan(PROMPTLY_MS);
  });

  it('start says a port is in use before it starts anything (--port, PROCESSOR_PORT)', async () => {
    const byOption = await hookledger(
      ['start', '--state-dir', stateDir, '--port', String(held.port)],
      await base(),
    );
    expect(oneLine(byOption)).toBe(`hookledger: port ${held.port} is in use (--port)`);
    expect(byOption.code).toBe(1);
    expect(byOption.stdout).toBe('');
    expect(byOption.ms).toBeLessThan(PROMPTLY_MS);

    const processors = await hookledger(
      ['start', '--state-dir', stateDir],
      await base({ PROCESSOR_PORT: String(held.port) }),
    );
    expect(oneLine(processors)).toBe(`hookledger: port ${held.port} is in use (PROCESSOR_PORT)`);
    expect(processors.code).toBe(1);
  });

  it('start stops everything and exits non-zero when the ingest port is taken after the processors started', async () => {
    const env = await base();
    const began = Date.now();
    const child = launch(['start', '--state-dir', stateDir], env);
    const outcome = finished(child, began);
    // The processors' ops server answers first; ingest listens once both stages started (seconds later).
    const processorPort = Number(env.PROCESSOR_PORT);
    while (!(await answers(`http://127.0.0.1:${processorPort}/healthz`))) {
      if (child.exitCode !== null) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const taker = createServer();
    await new Promise<void>((resolve, reject) => {
      taker.once('error', reject);
      taker.listen(Number(env.INGEST_PORT), resolve);
    });
    const tookAt = Date.now();
    try {
      const result = await outcome;
      expect(oneLine(result)).toBe(`hookledger: port ${env.INGEST_PORT} is in use (INGEST_PORT)`);
      expect(result.code).toBe(1);
      expect(Date.now() - tookAt).toBeLessThan(PROMPTLY_MS);
      expect(await listening(processorPort)).toBe(false);
    } finally {
      await new Promise((resolve) => taker.close(resolve));
    }
  });

  it('names Kafka and where it was looked for when no broker answers, within seconds', async () => {
    const unreachable = { KAFKA_BROKERS: `127.0.0.1:${closed}` };
    for (const command of ['ingest', 'process', 'start']) {
      const args = command === 'start' ? ['start', '--state-dir', stateDir] : [command];
      const outcome = await hookledger(args, await base(unreachable));
      expect(oneLine(outcome), command).toBe(
        `hookledger: Kafka at 127.0.0.1:${closed} cannot be reached: connection refused (KAFKA_BROKERS)`,
      );
      expect(outcome.code, command).toBe(1);
      expect(outcome.ms, command).toBeLessThan(PROMPTLY_MS);
    }
  });

  it('names Kafka and where it was looked for in every command that reads or writes it, within seconds', async () => {
    const unreachable = { KAFKA_BROKERS: `127.0.0.1:${closed}` };
    const commands = [
      ['topics'],
      ['tail', 'webhooks.raw', '--from-beginning'],
      ['replay', '--id', 'unreachable'],
      ['replay', 'diff', '--id', 'unreachable'],
      ['redrive', '--dry-run'],
      ['quarantine', 'list'],
      ['quarantine', 'promote', '--source', 'it', '--dry-run'],
    ];
    for (const args of commands) {
      const command = args.join(' ');
      const outcome = await hookledger(args, await base(unreachable));
      expect(oneLine(outcome), command).toBe(
        `hookledger: Kafka at 127.0.0.1:${closed} cannot be reached: connection refused (KAFKA_BROKERS)`,
      );
      // replay diff keeps 1 for "differs": a failure to run is 3 (docs/cli.md, exit codes).
      expect(outcome.code, command).toBe(command.startsWith('replay diff') ? 3 : 1);
      expect(outcome.ms, command).toBeLessThan(PROMPTLY_MS);
    }
  });

  it('names the schema registry and where it was looked for when it does not answer', async () => {
    const url = `http://127.0.0.1:${closed}/apis/ccompat/v7`;
    for (const command of ['ingest', 'process']) {
      const outcome = await hookledger([command], await base({ SCHEMA_REGISTRY_URL: url }));
      expect(oneLine(outcome), command).toBe(
        `hookledger: schema registry at ${url} cannot be reached: connection refused (SCHEMA_REGISTRY_URL)`,
      );
      expect(outcome.code, command).toBe(1);
      expect(outcome.ms, command).toBeLessThan(PROMPTLY_MS);
    }
  });

  it('ingest refuses a weak key in one line, never showing it', async () => {
    for (const key of ['change-me', 'a-key-of-19-bytes-1']) {
      const outcome = await hookledger(
        ['ingest'],
        await base({ HOOKLEDGER_SOURCES: JSON.stringify({ it: { keys: { k1: key } } }) }),
      );
      expect(oneLine(outcome)).toMatch(
        /^hookledger: HOOKLEDGER_SOURCES: it\.keys\.k1: a key is at least 20 bytes/,
      );
      expect(outcome.stderr + outcome.stdout).not.toContain(key);
      expect(outcome.code).toBe(2);
      expect(outcome.ms).toBeLessThan(PROMPTLY_MS);
    }
  });

  it('ingest refuses a source that takes unsigned deliveries unless INGEST_UNSIGNED_SOURCES names it', async () => {
    const sources = JSON.stringify({ open: { signature: 'none' } });
    const refused = await hookledger(['ingest'], await base({ HOOKLEDGER_SOURCES: sources }));
    expect(oneLine(refused)).toMatch(
      /^hookledger: INGEST_UNSIGNED_SOURCES: source "open" accepts unsigned deliveries/,
    );
    expect(refused.code).toBe(2);
    expect(refused.ms).toBeLessThan(PROMPTLY_MS);
  });

  it('names a bad variable before start starts a stack', async () => {
    const outcome = await hookledger(
      ['start', '--state-dir', stateDir],
      await base({ KAFKA_BROKERS: undefined, SCHEMA_REGISTRY_URL: undefined, DEDUPE_WINDOW: '1h' }),
    );
    expect(oneLine(outcome)).toMatch(/^hookledger: DEDUPE_WINDOW: must be at least .*\(got "1h"\)$/);
    expect(outcome.code).toBe(2);
    expect(outcome.stdout).toBe('');
    expect(outcome.ms).toBeLessThan(PROMPTLY_MS);
  });

  it('says so in one line when there is no stack: none configured, none running, none to start', async () => {
    const noStack = {
      KAFKA_BROKERS: undefined,
      SCHEMA_REGISTRY_URL: undefined,
      HOOKLEDGER_STATE_DIR: path.join(stateDir, 'no-stack'),
      HOOKLEDGER_STACK: 'docker',
      DOCKER_HOST: `unix://${path.join(stateDir, 'no-docker.sock')}`,
    };
    const started = await hookledger(
      ['start', '--state-dir', path.join(stateDir, 'no-stack')],
      await base(noStack),
    );
    expect(oneLine(started)).toMatch(/Docker/);
    expect(started.code).toBe(1);
    expect(started.ms).toBeLessThan(PROMPTLY_MS);

    const ingest = await hookledger(['ingest'], await base(noStack));
    expect(oneLine(ingest)).toMatch(/KAFKA_BROKERS/);
    expect(ingest.code).not.toBe(0);
  });
});
