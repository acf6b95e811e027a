// exitProcess against what made it: a thread-pool call that never returns holds `process.exit()` for ever
// (Node joins its pool on the way out). A FIFO opened for reading with no writer is such a call: open()
// blocks in a pool thread, without using a core.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { waitForPidExit } from '../../../tools/stack/jvm-process.js';

const exitModule = fileURLToPath(new URL('../../../runtime/exit.ts', import.meta.url));

interface Ended {
  code: number | null;
  signal: NodeJS.Signals | null;
  afterMs: number;
  stdout: string;
}

const children: ChildProcess[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

/** Runs `body` (a module's lines, after `exitProcess`, `guardExit` and `fifo` are in scope) in a new node. */
async function runScript(body: string[]): Promise<Ended> {
  const dir = await mkdtemp(join(tmpdir(), 'hookledger-exit-'));
  dirs.push(dir);
  const fifo = join(dir, 'never-written');
  execFileSync('mkfifo', [fifo]);
  const script = [
    `import { open } from 'node:fs';`,
    `import { exitProcess, guardExit } from ${JSON.stringify(exitModule)};`,
    `const fifo = ${JSON.stringify(fifo)};`,
    ...body,
  ].join('\n');
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  let stdout = '';
  let exitCalledAt = 0;
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    if (exitCalledAt === 0 && stdout.includes('exiting')) exitCalledAt = Date.now();
  });
  return new Promise((resolve) => {
    child.once('exit', (code, signal) =>
      resolve({ code, signal, afterMs: Date.now() - exitCalledAt, stdout }),
    );
  });
}

describe('exitProcess', () => {
  it('ends a process whose exit a thread-pool call holds: killed once the bound has passed', async () => {
    const ended = await runScript([
      `open(fifo, 'r', () => {});`,
      `setTimeout(() => { console.log('exiting'); exitProcess(3, 500); }, 100);`,
    ]);
    expect(ended.signal).toBe('SIGKILL');
    expect(ended.afterMs).toBeGreaterThanOrEqual(400);
  }, 20_000);

  it('exits with the code when nothing holds the exit, and its guard ends with the process', async () => {
    const ended = await runScript([
      `const guard = guardExit(60_000);`,
      `console.log(JSON.stringify({ guard }));`,
      `console.log('exiting');`,
      `process.exit(3);`,
    ]);
    expect(ended).toMatchObject({ code: 3, signal: null });
    const { guard } = JSON.parse(ended.stdout.split('\n')[0]!) as { guard: number };
    expect(guard).toBeGreaterThan(0);
    expect(await waitForPidExit(guard, 10_000)).toBe(true);
  }, 20_000);

  it('keeps nothing running: a process that starts its guard and then has nothing to do ends by itself', async () => {
    const ended = await runScript([`console.log('exiting');`, `guardExit(60_000);`]);
    expect(ended).toMatchObject({ code: 0, signal: null });
    expect(ended.afterMs).toBeLessThan(5_000);
  }, 20_000);
});
