// The stream runner with its state on disk, over a fake Kafka: a state directory it cannot use stops the
// app with one line instead of retrying forever; one it can use shows its bytes and runs.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { useTempStateDirs } from '../../helpers/temp-state-dir.js';
import { FakeKafka } from './fake-stream-clients.js';
import { closeApps, p0, p1, start, topology, until } from './runner-fixtures.js';

afterEach(closeApps);
const dirs = useTempStateDirs();

describe('the stream runner with its state on disk', () => {
  it('stops with one line when another live process holds a task’s state directory', async () => {
    const root = dirs.root();
    const taken = join(root, 'app', 'i1', 'in-0');
    mkdirSync(taken, { recursive: true });
    writeFileSync(join(taken, 'LOCK'), String(process.ppid));
    const kafka = new FakeKafka();
    const app = await start(kafka, { stateDir: root });
    kafka.consumer.rebalance('assign', [p0]);
    await until(() => app.failure() !== undefined, 'the app stopped');
    expect(app.failure()?.message).toMatch(/state directory .*in-0 is locked by process/);
  });

  it('stops with one line naming the directory when a task’s lock file cannot be read, not ready with no tasks', async () => {
    const root = dirs.root();
    const broken = join(root, 'app', 'i1', 'in-0');
    mkdirSync(join(broken, 'LOCK'), { recursive: true }); // reading it fails with EISDIR
    const kafka = new FakeKafka();
    kafka.produce('in', 0, [1, 2, 3]);
    kafka.produce('in', 1, [10, 20, 30]);
    const app = await start(kafka, { stateDir: root });
    kafka.consumer.rebalance('assign', [p0, p1]);
    await until(() => app.failure() !== undefined, 'the app stopped');
    expect(app.failure()?.name).toBe('StateStoreFailedError');
    expect(app.failure()?.message).toContain(
      `the task of in[0] could not be made: state directory ${broken}: its lock file cannot be taken (EISDIR`,
    );
    expect(app.readiness()).toMatchObject({ ready: false, reasons: [`stopped: ${app.failure()?.message}`] });
  });

  it('stops with one line naming the partition and directory when a task’s store cannot be made', async () => {
    const root = dirs.root();
    const corrupted = {
      ...topology,
      stores: [
        {
          ...topology.stores[0]!,
          create: () => {
            throw Object.assign(new Error('MDB_CORRUPTED: Located page was wrong type'), { code: -30796 });
          },
        },
      ],
    };
    const kafka = new FakeKafka();
    kafka.produce('in', 0, [1, 2, 3]);
    const app = await start(kafka, { stateDir: root, topology: corrupted });
    kafka.consumer.rebalance('assign', [p0]);
    await until(() => app.failure() !== undefined, 'the app stopped');
    expect(app.failure()?.name).toBe('StateStoreFailedError');
    expect(app.failure()?.message).toBe(
      `the task of in[0] could not be made: state directory ${join(root, 'app', 'i1', 'in-0')} failed (MDB_CORRUPTED: Located page was wrong type): remove it (its state is restored from the changelogs) or repair its volume`,
    );
    expect(app.readiness().ready).toBe(false);
  });

  it('runs a partition over its directory and shows the bytes it takes', async () => {
    const kafka = new FakeKafka();
    kafka.produce('in', 0, [1, 2, 3]);
    const app = await start(kafka, { stateDir: dirs.root() });
    kafka.consumer.rebalance('assign', [p0]);
    await until(() => kafka.values('out').length === 3, 'the records routed');
    expect(app.stateDiskBytes?.()).toBeGreaterThan(0);
  });
});
