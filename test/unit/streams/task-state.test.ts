import { describe, expect, it } from 'vitest';
import {
  IllegalTransitionError,
  type TaskState,
  TaskStateMachine,
} from '../../../runtime/streams/task-state.js';

/** A consumer port that records what the state machine asked of it. */
function fakePort() {
  const calls: string[] = [];
  return {
    calls,
    pause: (topic: string, partition: number) => calls.push(`pause ${topic}[${partition}]`),
    resume: (topic: string, partition: number) => calls.push(`resume ${topic}[${partition}]`),
  };
}

describe('a partition task state machine', () => {
  it('pauses its partition when created and resumes it only when running', () => {
    const port = fakePort();
    const task = new TaskStateMachine('raw', 0, port);
    expect(task.state).toBe('assigned');
    expect(port.calls).toEqual(['pause raw[0]']);
    task.transitionTo('restoring');
    expect(port.calls).toEqual(['pause raw[0]']);
    task.transitionTo('running');
    expect(port.calls).toEqual(['pause raw[0]', 'resume raw[0]']);
    expect(task.running).toBe(true);
  });

  it('pauses a running partition when it is revoked or lost', () => {
    for (const end of ['revoked', 'lost'] as const) {
      const port = fakePort();
      const task = new TaskStateMachine('raw', 1, port);
      task.transitionTo('restoring');
      task.transitionTo('running');
      task.transitionTo(end);
      expect(port.calls.at(-1)).toBe('pause raw[1]');
      expect(task.owned).toBe(false);
      task.transitionTo('closed');
      expect(task.state).toBe('closed');
    }
  });

  it('can be revoked, lost or closed from every owned state', () => {
    const paths: TaskState[][] = [
      ['revoked', 'closed'],
      ['lost', 'closed'],
      ['closed'],
      ['restoring', 'revoked', 'closed'],
      ['restoring', 'lost', 'closed'],
      ['restoring', 'closed'],
      ['restoring', 'running', 'closed'],
    ];
    for (const path of paths) {
      const task = new TaskStateMachine('raw', 0, fakePort());
      for (const state of path) task.transitionTo(state);
      expect(task.state).toBe(path.at(-1));
    }
  });

  it('throws on an illegal move and stays where it was', () => {
    const illegal: [TaskState[], TaskState][] = [
      [[], 'running'],
      [['restoring', 'running'], 'restoring'],
      [['revoked'], 'running'],
      [['lost'], 'restoring'],
      [['lost'], 'revoked'],
      [['closed'], 'assigned'],
      [['closed'], 'closed'],
    ];
    for (const [path, to] of illegal) {
      const task = new TaskStateMachine('raw', 0, fakePort());
      for (const state of path) task.transitionTo(state);
      const before = task.state;
      expect(() => task.transitionTo(to)).toThrow(IllegalTransitionError);
      expect(task.state).toBe(before);
    }
  });

  it('a partition lost while paused is resumed by the task of its next assignment', () => {
    const port = fakePort();
    const first = new TaskStateMachine('raw', 2, port);
    first.transitionTo('restoring');
    first.transitionTo('running');
    first.transitionTo('lost');
    first.transitionTo('closed');
    // Assigned back later: a new task, which pauses, restores, then resumes.
    const again = new TaskStateMachine('raw', 2, port);
    again.transitionTo('restoring');
    again.transitionTo('running');
    expect(port.calls).toEqual([
      'pause raw[2]',
      'resume raw[2]',
      'pause raw[2]',
      'pause raw[2]',
      'resume raw[2]',
    ]);
  });
});
