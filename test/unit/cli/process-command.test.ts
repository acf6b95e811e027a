import { describe, expect, it } from 'vitest';
import { stoppedLine } from '../../../tools/cli/commands/process.js';

describe('hookledger process, when a stage stops by itself', () => {
  it('prints one line naming the stage and the reason', () => {
    const line = stoppedLine(
      'dedupe-router',
      'producer hl-a fenced repeatedly:\n another instance runs with instance id a',
    );
    expect(line).toBe(
      'the dedupe-router stage stopped: producer hl-a fenced repeatedly: another instance runs with instance id a',
    );
    expect(line).not.toContain('\n');
  });

  it('still names the stage when it has no reason', () => {
    expect(stoppedLine('tables', undefined)).toBe('the tables stage stopped: stopped by itself');
  });
});
