import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { open } from 'lmdb';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { StateStoreFailedError } from '../../../runtime/streams/errors.js';
import { StateDirLockedError, TaskStateDir } from '../../../runtime/streams/state-dir.js';
import { useTempStateDirs } from '../../helpers/temp-state-dir.js';

const dirs = useTempStateDirs();
afterEach(() => {
  vi.restoreAllMocks();
});

/** The lmdb binding as state-dir.ts loads it (CommonJS), whose `open` a test may wrap. */
const lmdbAsLoaded = createRequire(import.meta.url)('lmdb') as typeof import('lmdb');
const checkpoint = { offsets: { changelog: '42' }, streamTime: 1_000 };

/** Writes a key of the directory's main database behind its back (as a crash or another boot left it). */
async function tamper(dir: TaskStateDir, key: string, value: Buffer): Promise<void> {
  const env = open<Buffer, string>({ path: join(dir.path, 'data.mdb'), encoding: 'binary' });
  env.putSync(key, value);
  await env.close();
}

describe("a task's state directory", () => {
  it('lives under <root>/<app>/<topic>-<partition>, locked while open', async () => {
    const root = dirs.root();
    const dir = dirs.open(3, root);
    expect(dir.path).toBe(join(root, 'app', 'i1', 'webhooks.raw-3'));
    expect(readFileSync(join(dir.path, 'LOCK'), 'utf8')).toBe(String(process.pid));
    expect(
      () => new TaskStateDir({ root, appId: 'app', instanceId: 'i1', topic: 'webhooks.raw', partition: 3 }),
    ).toThrow(StateDirLockedError);
    await dir.close();
    expect(existsSync(join(dir.path, 'LOCK'))).toBe(false);
  });

  it('refuses a directory locked by another live process, and takes over a dead one’s lock', async () => {
    const root = dirs.root();
    const first = dirs.open(0, root);
    await first.close();
    writeFileSync(join(first.path, 'LOCK'), String(process.ppid));
    expect(() => dirs.open(0, root)).toThrow(/locked by process/);
    writeFileSync(join(first.path, 'LOCK'), '999999999');
    expect(dirs.open(0, root).checkpoint).toBeUndefined();
  });

  it('keeps its state and checkpoint across a close, and trusts them', async () => {
    const root = dirs.root();
    const dir = dirs.open(0, root);
    expect(dir.takeDistrust()).toBeUndefined();
    dir.database('s').putSync(Buffer.from('k'), Buffer.from('v'));
    dir.writeCheckpoint(checkpoint);
    await dir.close();
    const again = dirs.open(0, root);
    expect(again.takeDistrust()).toBeUndefined();
    expect(again.checkpoint).toEqual(checkpoint);
    expect(again.database('s').getBinary(Buffer.from('k'))?.toString()).toBe('v');
  });

  it('distrusts state without a checkpoint (a restore that never finished)', async () => {
    const root = dirs.root();
    const dir = dirs.open(0, root);
    dir.database('s').putSync(Buffer.from('k'), Buffer.from('v'));
    await dir.close();
    expect(dirs.open(0, root).takeDistrust()).toMatch(/no checkpoint/);
  });

  it('distrusts an unreadable checkpoint and state written under another boot of the machine', async () => {
    const root = dirs.root();
    const dir = dirs.open(0, root);
    dir.writeCheckpoint(checkpoint);
    await dir.close();
    await tamper(dir, 'checkpoint', Buffer.from('{not json'));
    const corrupt = dirs.open(0, root);
    expect(corrupt.takeDistrust()).toMatch(/unreadable/);
    expect(corrupt.checkpoint).toBeUndefined();
    corrupt.writeCheckpoint(checkpoint);
    await corrupt.close();
    await tamper(dir, 'boot', Buffer.from('another boot'));
    const rebooted = dirs.open(0, root);
    expect(rebooted.takeDistrust()).toMatch(/machine restarted/);
    expect(rebooted.takeDistrust()).toBeUndefined();
  });

  it('keeps distrusting a checkpoint of another boot when it is reopened before the wipe', async () => {
    const root = dirs.root();
    const dir = dirs.open(0, root);
    dir.writeCheckpoint(checkpoint);
    await dir.close();
    await tamper(dir, 'boot', Buffer.from('a boot before the machine crashed'));
    const rebooted = dirs.open(0, root);
    expect(rebooted.takeDistrust()).toMatch(/machine restarted/);
    // The process dies (or the wipe is refused) before the wipe.
    await rebooted.close();
    const next = dirs.open(0, root);
    expect(next.checkpoint).toBeUndefined();
    expect(next.takeDistrust()).toMatch(/no checkpoint/);
  });

  it('wipes every store and its checkpoint', () => {
    const dir = dirs.open();
    dir.database('a').putSync(Buffer.from('k'), Buffer.from('v'));
    dir.database('b').putSync(Buffer.from('k'), Buffer.from('v'));
    dir.writeCheckpoint(checkpoint);
    dir.wipe();
    expect(dir.checkpoint).toBeUndefined();
    expect(dir.database('a').getBinary(Buffer.from('k'))).toBeUndefined();
    expect(dir.database('b').getBinary(Buffer.from('k'))).toBeUndefined();
    expect(dir.sizeOnDisk()).toBeGreaterThan(0);
  });

  it('stops with one line naming the directory when its lock file cannot be read', () => {
    const root = dirs.root();
    const path = join(root, 'app', 'i1', 'webhooks.raw-0');
    mkdirSync(join(path, 'LOCK'), { recursive: true }); // reading it fails with EISDIR
    const opening = () => dirs.open(0, root);
    expect(opening).toThrow(StateStoreFailedError);
    expect(opening).toThrow(`state directory ${path}: its lock file cannot be taken (EISDIR`);
  });

  it('closes its environment and releases its lock when its state cannot be read or written', async () => {
    const root = dirs.root();
    const realOpen = lmdbAsLoaded.open;
    const opened: { status?: string }[] = [];
    vi.spyOn(lmdbAsLoaded, 'open').mockImplementationOnce(((...args: Parameters<typeof open>) => {
      const env = realOpen(...args);
      env.putSync = () => {
        throw new Error('MDB_MAP_FULL: Environment mapsize limit reached');
      };
      opened.push(env as { status?: string });
      return env;
    }) as typeof open);
    const path = join(root, 'app', 'i1', 'webhooks.raw-0');
    expect(() => dirs.open(0, root)).toThrow(
      new StateStoreFailedError(
        `state directory ${path} cannot be read or written (MDB_MAP_FULL: Environment mapsize limit reached): remove it (its state is restored from the changelogs) or repair its volume`,
      ),
    );
    expect(opened[0]?.status).toBe('closed');
    expect(existsSync(join(path, 'LOCK'))).toBe(false);
    expect(dirs.open(0, root).takeDistrust()).toMatch(/no checkpoint/); // opened again, by this process
  });
});
