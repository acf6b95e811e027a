// What `hookledger stack restart|kill|freeze|thaw` acts on, from its arguments.
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../../tools/cli/command.js';
import { stackTarget } from '../../../tools/cli/commands/stack.js';

describe('stack restart, kill, freeze and thaw', () => {
  it('restart: every broker, one node, or the registry', () => {
    expect(stackTarget('restart', ['kafka'])).toEqual({ component: 'kafka' });
    expect(stackTarget('restart', ['kafka', '2'])).toEqual({ component: 'kafka', node: 2 });
    expect(stackTarget('restart', ['registry'])).toEqual({ component: 'registry' });
  });

  it('kill: one named node, or the registry', () => {
    expect(stackTarget('kill', ['kafka', '3'])).toEqual({ component: 'kafka', node: 3 });
    expect(stackTarget('kill', ['registry'])).toEqual({ component: 'registry' });
    expect(() => stackTarget('kill', ['kafka'])).toThrow(/name the Kafka node to kill/);
  });

  it('freeze and thaw: the registry only', () => {
    expect(stackTarget('freeze', ['registry'])).toEqual({ component: 'registry' });
    expect(stackTarget('thaw', ['registry'])).toEqual({ component: 'registry' });
    expect(() => stackTarget('freeze', ['kafka', '1'])).toThrow(
      'usage: hookledger stack freeze registry [--state-dir <dir>]: cannot freeze "kafka"',
    );
  });

  it('refuses anything else with the usage line', () => {
    const cases: [Parameters<typeof stackTarget>[0], string[], string][] = [
      ['restart', [], 'usage: hookledger stack restart kafka [<n>] | registry [--state-dir <dir>]'],
      ['restart', ['zookeeper'], 'cannot restart "zookeeper"'],
      ['restart', ['kafka', 'two'], 'expected a node number, got "two"'],
      ['restart', ['kafka', '0'], 'expected a node number, got "0"'],
      ['restart', ['kafka', '1', '2'], 'unexpected argument "2"'],
      ['kill', ['registry', '1'], 'unexpected argument "1"'],
      ['thaw', [], 'usage: hookledger stack thaw registry [--state-dir <dir>]'],
    ];
    for (const [subcommand, positionals, message] of cases) {
      expect(() => stackTarget(subcommand, positionals), positionals.join(' ')).toThrow(UsageError);
      expect(() => stackTarget(subcommand, positionals), positionals.join(' ')).toThrow(message);
    }
  });
});
