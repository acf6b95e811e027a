// Every usage mistake is one line: node's parseArgs explains some of its refusals in several.
import { describe, expect, it } from 'vitest';
import { parseOptions, UsageError } from '../../../tools/cli/command.js';

describe('parseOptions', () => {
  it('turns every parseArgs refusal into a one-line UsageError', () => {
    const options = { count: { type: 'string' } } as const;
    for (const args of [['--count', '-1'], ['--colour'], ['--count']]) {
      let error: unknown;
      try {
        parseOptions(args, options);
      } catch (thrown) {
        error = thrown;
      }
      expect(error, args.join(' ')).toBeInstanceOf(UsageError);
      expect((error as Error).message, args.join(' ')).not.toContain('\n');
    }
    expect(() => parseOptions(['--count', '-1'], options)).toThrow(/--count.*ambiguous/);
  });
});
