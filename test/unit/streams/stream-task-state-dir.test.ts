// A task whose state is on disk: where its restore starts, the checkpoint it writes when the restore
// finishes, and what a lost partition or a changelog that moved does to it.
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { StateDirs } from '../../../runtime/streams/state-dirs.js';
import { StreamTask } from '../../../runtime/streams/stream-task.js';
import { useTempStateDirs } from '../../helpers/temp-state-dir.js';
import { topology } from './runner-fixtures.js';

const dirs = useTempStateDirs();
const port = { pause: () => undefined, resume: () => undefined };
const CHANGELOG = 'in-changelog';

function taskOver(stateDirs: StateDirs) {
  return new StreamTask<number>({
    topology,
    source: topology.sources[0]!,
    partition: 0,
    port,
    logger: pino({ level: 'silent' }),
    stateDirs,
  });
}

/** Restores the task as restore.ts does: the start decided on the bounds, the end recorded, then finished. */
function restore(task: StreamTask<number>, bounds: { low: bigint; high: bigint }): bigint | undefined {
  task.machine.transitionTo('restoring');
  task.resetStores();
  const from = task.restoreFrom(CHANGELOG, bounds);
  task.restoredTo(CHANGELOG, bounds.high);
  task.finishRestore();
  task.machine.transitionTo('running');
  return from;
}

describe('a task with its state on disk', () => {
  it('restores in full the first time, then from the checkpoint its restore wrote', async () => {
    const stateDirs = new StateDirs(dirs.root(), 'app', 'i1');
    const first = taskOver(stateDirs);
    expect(restore(first, { low: 0n, high: 40n })).toBeUndefined();
    expect(first.stateDir?.checkpoint?.offsets).toEqual({ [CHANGELOG]: '40' });
    first.close();
    const again = taskOver(stateDirs);
    expect(restore(again, { low: 0n, high: 55n })).toBe(40n);
    expect(again.stateDir?.checkpoint?.offsets).toEqual({ [CHANGELOG]: '55' });
    again.close();
    await stateDirs.closeAll();
  });

  it('restores in full when its checkpoint is past the changelog’s end', async () => {
    const stateDirs = new StateDirs(dirs.root(), 'app', 'i1');
    const task = taskOver(stateDirs);
    restore(task, { low: 0n, high: 40n });
    task.close();
    expect(restore(taskOver(stateDirs), { low: 0n, high: 10n })).toBeUndefined();
    await stateDirs.closeAll();
  });

  it('takes checkpoints after commits only while running, and forgets them when its partition is lost', async () => {
    const stateDirs = new StateDirs(dirs.root(), 'app', 'i1');
    const task = taskOver(stateDirs);
    restore(task, { low: 0n, high: 40n });
    task.checkpoint(new Map([[CHANGELOG, 70n]]), 5_000);
    expect(task.stateDir?.checkpoint).toEqual({ offsets: { [CHANGELOG]: '70' }, streamTime: 5_000 });
    task.machine.transitionTo('lost');
    task.forgetCheckpoint();
    task.checkpoint(new Map([[CHANGELOG, 90n]]), 6_000);
    expect(task.stateDir?.checkpoint).toBeUndefined();
    task.close();
    expect(restore(taskOver(stateDirs), { low: 0n, high: 90n })).toBeUndefined();
    await stateDirs.closeAll();
  });
});
