// The status line: redrawn in place on a terminal, a plain line only when it changed elsewhere.
import { describe, expect, it } from 'vitest';
import { StatusDisplay } from '../../../../tools/cli/start/status-display.js';

function output(isTTY: boolean) {
  const written: string[] = [];
  return { out: { isTTY, columns: 60, write: (text: string) => written.push(text) }, written };
}

describe('the start status display', () => {
  it('on a terminal, redraws one line in place and ends it with a newline when stopped', async () => {
    const { out, written } = output(true);
    let n = 0;
    const display = new StatusDisplay({ out, read: async () => `received ${n}` });
    await display.refresh();
    n = 5;
    await display.refresh();
    display.note('warning: cluster probe failed; not ready');
    await display.stop();
    expect(written.join('')).toBe(
      '\r\x1b[2Kreceived 0\r\x1b[2Kreceived 5\r\x1b[2Kwarning: cluster probe failed; not ready\nreceived 5\r\x1b[2Kreceived 5\n',
    );
    expect(written.join('').split('\n')).toHaveLength(3);
  });

  it('cuts a line wider than the terminal, so a redraw clears all of it', async () => {
    const { out, written } = output(true);
    const display = new StatusDisplay({ out, read: async () => 'x'.repeat(100) });
    await display.refresh();
    expect(written[0]).toBe(`\r\x1b[2K${'x'.repeat(58)}…`);
  });

  it('elsewhere, prints a time-stamped line only when it changed', async () => {
    const { out, written } = output(false);
    let line = 'received 0';
    const display = new StatusDisplay({
      out,
      read: async () => line,
      now: () => new Date(2026, 0, 1, 9, 5, 7),
    });
    await display.refresh();
    await display.refresh();
    line = 'received 3';
    await display.refresh();
    await display.stop();
    expect(written).toEqual(['09:05:07 received 0\n', '09:05:07 received 3\n']);
  });
});
