// replay and replay diff print their data on stdout: their log lines must not land there too.
import { describe, expect, it } from 'vitest';
import { stderrLogger } from '../../../tools/cli/command.js';

describe('a command logger', () => {
  it('writes to the stderr it is given, errors only unless LOG_LEVEL asks for more', () => {
    const lines: string[] = [];
    const logger = stderrLogger('info', 'replay-diff', { write: (text: string) => lines.push(text) });
    logger.info('not shown');
    logger.error('the registry answered 503');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ name: 'replay-diff', msg: 'the registry answered 503' });

    const verbose: string[] = [];
    stderrLogger('debug', 'replay', { write: (text: string) => verbose.push(text) }).debug('shown');
    expect(verbose).toHaveLength(1);
  });
});
