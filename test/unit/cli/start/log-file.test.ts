// start's log: JSON lines in a file, warnings and errors also as one short line each, repeats held back.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { noticeStream, noticeText, openStartLog } from '../../../../tools/cli/start/log-file.js';

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

describe("start's log file", () => {
  it('turns a warning into one short line with its reason, and an error into an error line', () => {
    const warn = JSON.stringify({
      level: 40,
      msg: 'cannot connect a producer',
      reason: 'timed out\n  after 5 s',
    });
    expect(noticeText(warn)?.text).toBe('warning: cannot connect a producer: timed out after 5 s');
    const error = JSON.stringify({ level: 50, msg: 'stream app stopping', err: { message: 'fenced' } });
    expect(noticeText(error)?.text).toBe('error: stream app stopping: fenced');
    expect(noticeText('not json')).toBeUndefined();
    expect(noticeText(JSON.stringify({ level: 40, msg: 'x'.repeat(500) }))?.text).toHaveLength(160);
  });

  it('shows a message once per interval, however often it is logged', () => {
    const shown: string[] = [];
    let now = 0;
    const stream = noticeStream({ notify: (line) => shown.push(line), repeatMs: 60_000, now: () => now });
    const line = JSON.stringify({ level: 40, msg: 'processing failed; aborting and retrying', reason: 'x' });
    stream.write(line);
    now = 1_000;
    stream.write(line);
    now = 61_000;
    stream.write(line);
    expect(shown).toHaveLength(2);
  });

  it('writes JSON lines to the file, keeps the previous run as .1, and passes warnings on', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'start-log-'));
    dirs.push(dir);
    const file = path.join(dir, 'logs', 'hookledger.log');
    const notices: string[] = [];
    openStartLog({ file, level: 'info', notify: (l) => notices.push(l) }).logger.info('first run');
    const { logger } = openStartLog({ file, level: 'info', notify: (l) => notices.push(l) });
    logger.info({ key: 'secret' }, 'second run');
    logger.warn({ reason: 'connection refused' }, 'cannot connect a producer');
    const lines = (await readFile(file, 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => l.msg)).toEqual(['second run', 'cannot connect a producer']);
    expect(lines[0].key).toBe('[redacted]');
    expect(await readFile(`${file}.1`, 'utf8')).toContain('first run');
    expect(notices).toEqual(['warning: cannot connect a producer: connection refused']);
  });
});
