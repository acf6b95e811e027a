// The stream runner with its state on disk, over a fake Kafka: a state directory it cannot use stops the
// app with one line instead of retrying forever; one it can use shows its bytes and runs.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { useTempStateDirs } from '../../helpers/temp-state-dir.js';
import { FakeKafka } from './fake-stream-clients.js';
import { closeApps, p0, start, until } from './runner-fixtures.js';

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

  it('runs a partition over its directory and shows the bytes it takes', async () => {
    const kafka = new FakeKafka();
    kafka.produce('in', 0, [1, 2, 3]);
    const app = await start(kafka, { stateDir: dirs.root() });
    kafka.consumer.rebalance('assign', [p0]);
    await until(() => kafka.values('out').length === 3, 'the records routed');
    expect(app.stateDiskBytes?.()).toBeGreaterThan(0);
  });
});
