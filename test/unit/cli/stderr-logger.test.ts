// replay and replay diff print their data on stdout: their log lines must not land there too.
import { readdirSync, readFileSync } from 'node:fs';
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

  it('shows only what ends the command when asked for fatal as its quiet level', () => {
    const lines: string[] = [];
    const logger = stderrLogger('info', 'tail', { write: (text: string) => lines.push(text) }, 'fatal');
    logger.error('a broker refused a fetch; librdkafka retries');
    logger.fatal('gone');
    expect(lines.map((line) => JSON.parse(line).msg)).toEqual(['gone']);
  });

  it('is what every command that prints data builds (only process logs on stdout: its logs are its output)', () => {
    const dir = new URL('../../../tools/cli/commands/', import.meta.url);
    const onStdout = readdirSync(dir)
      .filter((file) => file.endsWith('.ts'))
      .filter((file) => readFileSync(new URL(file, dir), 'utf8').includes('createLogger('));
    expect(onStdout).toEqual(['process.ts']);
  });
});
