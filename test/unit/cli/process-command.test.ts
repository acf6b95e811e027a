import { describe, expect, it } from 'vitest';
import type { RunningStage } from '../../../runtime/streams/stage.js';
import type { StreamApp } from '../../../runtime/streams/stream-runner.js';
import { stoppedLine } from '../../../tools/cli/commands/process.js';

const stage = (name: string, failure?: Error): RunningStage => ({
  name,
  app: { failure: () => failure } as unknown as StreamApp,
  close: async () => undefined,
});

describe('hookledger process, when a stage stops by itself', () => {
  it('prints one line naming the stage and the reason', () => {
    const line = stoppedLine('dedupe-router', [
      stage(
        'dedupe-router',
        new Error('producer hl-a fenced repeatedly:\n another instance runs with instance id a'),
      ),
      stage('tables'),
    ]);
    expect(line).toBe(
      'the dedupe-router stage stopped: producer hl-a fenced repeatedly: another instance runs with instance id a',
    );
    expect(line).not.toContain('\n');
  });

  it('still names the stage when it has no reason', () => {
    expect(stoppedLine('tables', [stage('tables')])).toBe('the tables stage stopped: stopped by itself');
  });
});
