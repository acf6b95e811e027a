// `npm run bench:state-direct -- --ids 100000000`: the dedupe state on disk at a size a changelog on this
// machine cannot restore in reasonable time, measured on the store alone (no Kafka): N ids written through
// the store's API (LmdbIdSet.setHashed) into one task directory per partition, each closed with a
// checkpoint; then a restart as a task does it (open the directories, read their checkpoints, the stores
// over them, restored() with an empty tail) timed, heap used after it, and a sample of lookups (ids held
// and ids not held). The restore of the changelog's tail after the checkpoint is not part of it: its time
// is that of the records it reads (bench:state measures it through Kafka).
//
// Ids are synthetic 16-byte hashes spread evenly over the key space and written in key order, a bulk
// load: 100 M SHA-256 hashes in random order would take hours to insert here. A B-tree filled in key
// order packs its pages fuller than one filled at random (a restore), so its size on disk is a lower
// bound (bench:state measures the random order's bytes per id). With --cold, the data files are evicted
// from the page cache (sync, then posix_fadvise DONTNEED through python3) before the restart.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DedupeStore, IdSetBacking } from '../../processors/dedupe-router/dedupe-store.js';
import { digestId } from '../../runtime/streams/id-set.js';
import { LmdbIdSet } from '../../runtime/streams/lmdb-id-set.js';
import { TaskStateDir, taskStateDirPath } from '../../runtime/streams/state-dir.js';
import { heapUsed, progressLog } from './state-store-loop.js';

const { values: opts } = parseArgs({
  options: {
    ids: { type: 'string', default: '100000000' },
    partitions: { type: 'string', default: '6' },
    lookups: { type: 'string', default: '20000' },
    cold: { type: 'boolean', default: false },
    /** Where the state directories go (a fresh folder under it, removed at the end). */
    root: { type: 'string', default: tmpdir() },
  },
});

const WEEK = 7 * 86_400_000;
const TOPIC = 'bench-direct.dedupe-changelog';
const log = progressLog('bench:state-direct');

/**
 * The i-th of n hashes, as a digest's text (digestId's form): evenly spread (so in key order as i grows),
 * its other bytes mixed from i.
 */
function syntheticHash(i: number, n: number, into = Buffer.allocUnsafe(16)): string {
  into.writeUInt32BE(Math.floor((i * 2 ** 32) / n), 0);
  into.writeUInt32BE(i >>> 0, 4);
  into.writeUInt32BE(Math.imul(i, 0x9e37_79b1) >>> 0, 8);
  into.writeUInt32BE(Math.imul(i ^ 0x5bd1_e995, 0x85eb_ca6b) >>> 0, 12);
  return into.toString('latin1');
}

function openDir(root: string, partition: number): TaskStateDir {
  return new TaskStateDir({ root, appId: 'bench', instanceId: 'bench', topic: TOPIC, partition });
}

async function main(): Promise<void> {
  const ids = Number(opts.ids);
  const partitions = Number(opts.partitions);
  const lookups = Number(opts.lookups);
  const root = mkdtempSync(join(opts.root, 'hookledger-bench-direct-'));
  const perPartition = (p: number) => Math.floor(ids / partitions) + (p < ids % partitions ? 1 : 0);
  const now = Date.now();
  try {
    const writeStarted = performance.now();
    let diskBytes = 0;
    for (let p = 0; p < partitions; p++) {
      const n = perPartition(p);
      const dir = openDir(root, p);
      const set = new LmdbIdSet(dir, 'dedupe');
      const key = Buffer.allocUnsafe(16);
      for (let i = 0; i < n; i++) set.setHashed(syntheticHash(i, n, key), now, 1);
      set.flush();
      dir.writeCheckpoint({ offsets: { [TOPIC]: String(n) }, streamTime: now });
      diskBytes += dir.sizeOnDisk();
      await dir.close();
      log(`partition ${p}: ${n} ids written`);
    }
    const writeSeconds = (performance.now() - writeStarted) / 1000;
    log(`${ids} ids in ${(diskBytes / 1e9).toFixed(2)} GB, written in ${writeSeconds.toFixed(0)} s`);

    if (opts.cold) {
      execFileSync('sync');
      execFileSync('python3', [
        '-c',
        'import os,sys\nfor f in sys.argv[1:]:\n  fd=os.open(f,os.O_RDONLY); os.posix_fadvise(fd,0,0,os.POSIX_FADV_DONTNEED); os.close(fd)',
        ...Array.from({ length: partitions }, (_, p) =>
          join(
            taskStateDirPath({ root, appId: 'bench', instanceId: 'bench', topic: TOPIC, partition: p }),
            'data.mdb',
          ),
        ),
      ]);
      log('data files evicted from the page cache');
    }

    log('restart: open every directory, read its checkpoint, the stores over them');
    const before = heapUsed();
    const restartStarted = performance.now();
    const dirs = Array.from({ length: partitions }, (_, p) => openDir(root, p));
    const stores = dirs.map((dir) => {
      if (dir.takeDistrust() !== undefined || dir.checkpoint === undefined)
        throw new Error(`${dir.path}: no usable checkpoint`);
      const store = new DedupeStore(WEEK, IdSetBacking.of(dir));
      store.restored(dir.checkpoint.streamTime);
      return store;
    });
    const restartSeconds = (performance.now() - restartStarted) / 1000;
    const heapBytes = heapUsed() - before;

    const lookupStarted = performance.now();
    let found = 0;
    for (let k = 0; k < lookups; k++) {
      const p = k % partitions;
      const n = perPartition(p);
      const i = Math.floor((((k * 2_654_435_761) % 2 ** 32) / 2 ** 32) * n);
      if (stores[p]!.ids.ids.getHashed(syntheticHash(i, n)) !== undefined) found++;
      const miss = digestId(`bench/absent_${k}`);
      if (stores[p]!.ids.ids.getHashed(miss) !== undefined) found--;
    }
    const lookupMicros = ((performance.now() - lookupStarted) * 1000) / (2 * lookups);
    if (found !== lookups) throw new Error(`expected ${lookups} ids found and none absent, got ${found}`);
    await Promise.all(dirs.map((dir) => dir.close()));

    const result = {
      ids,
      partitions,
      cold: opts.cold,
      writeSeconds,
      bytesOnDisk: diskBytes,
      bytesPerId: diskBytes / ids,
      restartSeconds,
      heapBytes,
      lookups: 2 * lookups,
      microsPerLookup: lookupMicros,
      load1: loadavg()[0],
    };
    process.stdout.write(
      `| ids | written in | on disk | restart (open + checkpoints) | heap after | lookup (held and not) |\n|---:|---:|---:|---:|---:|---:|\n| ${ids.toLocaleString('en')} | ${writeSeconds.toFixed(0)} s | ${(diskBytes / 1e9).toFixed(2)} GB (${result.bytesPerId.toFixed(0)} B/id) | ${restartSeconds.toFixed(3)} s | ${(heapBytes / 1e6).toFixed(1)} MB | ${lookupMicros.toFixed(1)} µs |\n${JSON.stringify(result)}\n`,
    );
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

await main();
