import { describe, expect, it } from 'vitest';
import { progressBar, progressLine, progressReporter, rateAndEta } from '../../../tools/replay/progress.js';

const sample = { label: 'dedupe-router', done: 500n, total: 2000n, elapsedMs: 10_000 };

describe('replay progress', () => {
  it('gives the rate over the run and the time left at that rate', () => {
    expect(rateAndEta(sample)).toEqual({ rate: 50, etaSeconds: 30 });
    expect(rateAndEta({ ...sample, done: 0n }).etaSeconds).toBe(Number.POSITIVE_INFINITY);
    expect(rateAndEta({ ...sample, done: 2000n }).etaSeconds).toBe(0);
  });

  it('draws a bar with percentage, counts, rate and ETA', () => {
    expect(progressBar(sample, 8)).toBe('dedupe-router [##......] 25.0% 500/2000 · 50/s · ETA 0:30');
    expect(progressBar({ ...sample, total: 0n, done: 0n }, 4)).toContain('100.0%');
  });

  it('shows the records a stage read beside the offsets it passed', () => {
    const tables = { label: 'tables', done: 350n, total: 350n, read: 287, elapsedMs: 1_000 };
    expect(progressBar(tables, 4)).toBe('tables [####] 100.0% 350/350 · 287 read · 350/s · ETA 0:00');
    expect(progressLine('replay r1', tables)).toBe(
      'replay r1: tables 100.0% (350 of 350 offsets, 287 records read), 350 offsets/s, ETA 0:00',
    );
  });

  it('shows further counts after the records read, led by the run it reports on', () => {
    const redrive = {
      label: 'webhooks.dlq',
      done: 40n,
      total: 80n,
      read: 39,
      counts: [['sent', 12]] as const,
      elapsedMs: 2_000,
    };
    expect(progressBar(redrive, 4)).toBe(
      'webhooks.dlq [##..] 50.0% 40/80 · 39 read · 12 sent · 20/s · ETA 0:02',
    );
    expect(progressLine('redrive r2', redrive)).toBe(
      'redrive r2: webhooks.dlq 50.0% (40 of 80 offsets, 39 records read, 12 sent), 20 offsets/s, ETA 0:02',
    );
  });

  it('writes log lines at most every interval when not on a terminal', () => {
    const lines: string[] = [];
    let now = 0;
    const reporter = progressReporter(
      'replay r1',
      { write: (t: string) => lines.push(t) },
      10_000,
      () => now,
    );
    now = 10_000;
    reporter.update(sample);
    now = 15_000;
    reporter.update(sample);
    now = 20_000;
    reporter.update(sample);
    reporter.end();
    expect(lines).toEqual([
      `${progressLine('replay r1', sample)}\n`,
      `${progressLine('replay r1', sample)}\n`,
    ]);
    expect(lines[0]).toBe('replay r1: dedupe-router 25.0% (500 of 2000 offsets), 50 offsets/s, ETA 0:30\n');
  });

  it('redraws one line on a terminal and ends it', () => {
    const out: string[] = [];
    const reporter = progressReporter('replay r1', { write: (t: string) => out.push(t), isTTY: true });
    reporter.update(sample);
    reporter.update({ ...sample, done: 1000n });
    reporter.end();
    expect(out).toHaveLength(3);
    expect(out[1]?.startsWith('\r\u001b[2Kdedupe-router [')).toBe(true);
    expect(out[2]).toBe('\n');
  });
});
