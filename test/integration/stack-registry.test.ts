// The registry of a local stack taken out and brought back as an operator does it: `stack freeze
// registry` / `thaw` (SIGSTOP: connections accepted, nothing answered) and `stack kill registry` /
// `restart` (connections refused, then the same address with the same schemas), `stack status` saying so.
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readStackRecord } from '../../tools/stack/index.js';

const bin = resolve(import.meta.dirname, '../../tools/cli/hookledger.js');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function hookledger(args: string[], env: NodeJS.ProcessEnv): Promise<Run> {
  return new Promise((done) => {
    execFile(process.execPath, [bin, ...args], { env, timeout: 300_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      done({ code, stdout, stderr });
    });
  });
}

/** The registry's line of `stack status`. */
function registryLine(status: Run): string {
  return status.stdout.split('\n').find((line) => line.startsWith('registry')) ?? '';
}

/** Whether a TCP connection to the URL's port is accepted (true) or refused (false). */
function accepts(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((done) => {
    const socket = connect({ host: hostname, port: Number(port) });
    socket.once('connect', () => {
      socket.destroy();
      done(true);
    });
    socket.once('error', () => done(false));
  });
}

/** GET within `ms`: its status, or `timeout`, or `refused`. */
async function get(url: string, ms = 3_000): Promise<number | 'timeout' | 'refused'> {
  try {
    return (await fetch(url, { signal: AbortSignal.timeout(ms) })).status;
  } catch (error) {
    return (error as Error).name === 'TimeoutError' ? 'timeout' : 'refused';
  }
}

// Always local JVMs: a Docker registry cannot be killed and started again on the same address.
describe('the local stack’s registry taken out and brought back', () => {
  let stateDir: string | undefined;
  let env: NodeJS.ProcessEnv = {};

  afterAll(async () => {
    if (!stateDir) return;
    await hookledger(['stack', 'down'], env);
    await rm(stateDir, { recursive: true, force: true });
  });

  it(
    'freeze/thaw and kill/restart registry: status shows it out, then back with its schemas on the same address',
    async () => {
      stateDir = await mkdtemp(join(tmpdir(), 'hookledger-registry-'));
      const { KAFKA_BROKERS, SCHEMA_REGISTRY_URL, HOOKLEDGER_LOCAL_STACK, ...inherited } = process.env;
      env = { ...inherited, HOOKLEDGER_STATE_DIR: stateDir, HOOKLEDGER_STACK: 'local', LOG_LEVEL: 'warn' };

      const up = await hookledger(['stack', 'up'], env);
      expect(up.code, up.stderr).toBe(0);
      const { registryUrl } = readStackRecord(stateDir)!;
      const subject = `stack-registry-${randomUUID()}-value`;
      const schema = JSON.stringify({
        type: 'record',
        name: 'Probe',
        fields: [{ name: 'id', type: 'string' }],
      });
      const registered = await fetch(`${registryUrl}/subjects/${subject}/versions`, {
        method: 'POST',
        headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' },
        body: JSON.stringify({ schema }),
      });
      expect(registered.status).toBe(200);
      const { id } = (await registered.json()) as { id: number };

      // Frozen: the port still takes connections, and no request is answered.
      const freeze = await hookledger(['stack', 'freeze', 'registry'], env);
      expect(freeze.code, freeze.stderr).toBe(0);
      expect(freeze.stderr).toContain('frozen with SIGSTOP');
      const frozen = await hookledger(['stack', 'status'], env);
      expect(frozen.code).toBe(1);
      expect(registryLine(frozen)).toMatch(/pid \d+ frozen \(SIGSTOP\)\s+NOT answering/);
      expect(await accepts(registryUrl)).toBe(true);
      expect(await get(`${registryUrl}/subjects`)).toBe('timeout');

      const thaw = await hookledger(['stack', 'thaw', 'registry'], env);
      expect(thaw.code, thaw.stderr).toBe(0);
      const thawed = await hookledger(['stack', 'status'], env);
      expect(thawed.code, thawed.stdout).toBe(0);
      expect(registryLine(thawed)).toMatch(/pid \d+ alive\s+answers/);

      // Killed: connections refused, and status says there is no registry process.
      const kill = await hookledger(['stack', 'kill', 'registry'], env);
      expect(kill.code, kill.stderr).toBe(0);
      expect(kill.stderr).toContain('`hookledger stack restart registry` starts it again');
      const down = await hookledger(['stack', 'status'], env);
      expect(down.code).toBe(1);
      expect(registryLine(down)).toMatch(/no live pid\s+NOT answering/);
      expect(down.stdout).toMatch(/^kafka\s.*\sanswers/m);
      expect(await accepts(registryUrl)).toBe(false);
      expect(await get(`${registryUrl}/subjects`)).toBe('refused');
      // Freezing what does not run says what to do.
      const noFreeze = await hookledger(['stack', 'freeze', 'registry'], env);
      expect(noFreeze.code).toBe(1);
      expect(noFreeze.stderr).toContain('`hookledger stack restart registry` starts it');

      // Restarted: same address, its schemas read back from Kafka before it answers.
      const restart = await hookledger(['stack', 'restart', 'registry'], env);
      expect(restart.code, restart.stderr).toBe(0);
      expect(readStackRecord(stateDir)!.registryUrl).toBe(registryUrl);
      const back = await hookledger(['stack', 'status'], env);
      expect(back.code, back.stdout).toBe(0);
      expect(registryLine(back)).toMatch(/pid \d+ alive\s+answers/);
      const byId = await fetch(`${registryUrl}/schemas/ids/${id}`);
      expect(byId.status).toBe(200);
      expect(JSON.parse(((await byId.json()) as { schema: string }).schema)).toEqual(JSON.parse(schema));
      // A running registry restarts too (stopped cleanly first).
      const again = await hookledger(['stack', 'restart', 'registry'], env);
      expect(again.code, again.stderr).toBe(0);
      expect(await get(`${registryUrl}/schemas/ids/${id}`)).toBe(200);
    },
    10 * 60_000,
  );
});
