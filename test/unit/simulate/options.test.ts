import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../../tools/cli/command.js';
import { parseRate, parseSimulateArgs } from '../../../tools/simulate/options.js';

describe('simulate options', () => {
  it('defaults to the platform: 30 s timeout, 72 h retry window, the local ingest URL of the source', () => {
    const { simulation, json } = parseSimulateArgs(['--source', 'energy', '--key', 'k'], {}, 1_000);
    expect(simulation).toMatchObject({
      url: 'http://127.0.0.1:8080/webhooks/energy',
      key: 'k',
      timeoutMs: 30_000,
      policy: { windowMs: 72 * 3_600_000, initialMs: 1_000, maxMs: 3_600_000, factor: 2 },
      ratePerSecond: 10,
      concurrency: 8,
      duplicateRate: 0,
      reorderRate: 0,
      invalidRate: 0,
      failureRate: 0.02,
      start: 1_000,
    });
    expect(simulation.count).toBeUndefined();
    expect(simulation.seed).toMatch(/^[0-9a-f]{8}$/);
    expect(json).toBe(false);
  });

  it('takes a retry window down to seconds, and durations for the timeout and back-off', () => {
    const { simulation } = parseSimulateArgs(
      [
        '--url',
        'https://in.example/hook?x=1',
        '--unsigned',
        '--retry-window',
        '10s',
        '--timeout',
        '250ms',
        '--backoff',
        '50ms',
      ],
      {},
    );
    expect(simulation.url).toBe('https://in.example/hook?x=1');
    expect(simulation.key).toBeUndefined();
    expect(simulation.policy.windowMs).toBe(10_000);
    expect(simulation.timeoutMs).toBe(250);
    expect(simulation.policy.initialMs).toBe(50);
  });

  it('refuses a timeout above the platform’s 30 s and a retry window beyond its 72 h', () => {
    // §8: 30 s by default, "a lower timeout can be configured"; retries stop after 72 hours. Shorter
    // values compress a run; longer ones would accept what the platform fails.
    const base = ['--source', 's', '--key', 'k'];
    expect(parseSimulateArgs([...base, '--timeout', '30s'], {}).simulation.timeoutMs).toBe(30_000);
    expect(() => parseSimulateArgs([...base, '--timeout', '31s'], {})).toThrow(
      /--timeout: at most 30s \(the platform's response time\), got "31s"/,
    );
    expect(parseSimulateArgs([...base, '--retry-window', '3d'], {}).simulation.policy.windowMs).toBe(
      72 * 3_600_000,
    );
    expect(() => parseSimulateArgs([...base, '--retry-window', '73h'], {})).toThrow(
      /--retry-window: at most 72h \(the platform's retry window\), got "73h"/,
    );
  });

  it('reads the key from --key-file (without its final newline) or HOOKLEDGER_SIMULATE_KEY', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'simulate-key-'));
    try {
      const file = path.join(dir, 'key');
      await writeFile(file, 'from-a-file\n');
      expect(parseSimulateArgs(['--source', 's', '--key-file', file], {}).simulation.key).toBe('from-a-file');
      expect(
        parseSimulateArgs(['--source', 's'], { HOOKLEDGER_SIMULATE_KEY: 'env-key' }).simulation.key,
      ).toBe('env-key');
      expect(() => parseSimulateArgs(['--source', 's', '--key-file', path.join(dir, 'none')], {})).toThrow(
        /--key-file: cannot read .* \(ENOENT\)/,
      );
      expect(() => parseSimulateArgs(['--source', 's', '--key', 'a', '--unsigned'], {})).toThrow(UsageError);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('reads rates per second, minute or hour, or unlimited', () => {
    expect(parseRate('10')).toBe(10);
    expect(parseRate('10/s')).toBe(10);
    expect(parseRate('600/m')).toBe(10);
    expect(parseRate('3600/h')).toBe(1);
    expect(parseRate('unlimited')).toBeUndefined();
    for (const bad of ['0', '-1', 'fast', '10/d']) expect(() => parseRate(bad)).toThrow(UsageError);
  });

  it('refuses shares outside 0..1, counts below 1 and a start that is not a date', () => {
    const base = ['--source', 's', '--key', 'k'];
    expect(() => parseSimulateArgs([...base, '--duplicate-rate', '1.5'], {})).toThrow(/--duplicate-rate/);
    expect(() => parseSimulateArgs([...base, '--reorder-rate', 'x'], {})).toThrow(/--reorder-rate/);
    expect(() => parseSimulateArgs([...base, '--invalid-rate', '-0.1'], {})).toThrow(/--invalid-rate/);
    expect(() => parseSimulateArgs([...base, '--failure-rate', '2'], {})).toThrow(/--failure-rate/);
    // A webhook is invalid, an OperationFailure or neither: the two shares cannot pass 1 together.
    expect(() => parseSimulateArgs([...base, '--invalid-rate', '0.6', '--failure-rate', '0.5'], {})).toThrow(
      /--invalid-rate and --failure-rate: together at most 1/,
    );
    expect(
      parseSimulateArgs([...base, '--invalid-rate', '0.5', '--failure-rate', '0.5'], {}).simulation,
    ).toMatchObject({ invalidRate: 0.5, failureRate: 0.5 });
    expect(() => parseSimulateArgs([...base, '--count', '0'], {})).toThrow(/--count/);
    expect(() => parseSimulateArgs([...base, '--start', 'yesterday'], {})).toThrow(/--start/);
    // Date.parse would take these: a year 2001, a time in the machine's zone.
    for (const loose of ['1', '2026-11-01T09:00:00', 'Nov 1 2026'])
      expect(() => parseSimulateArgs([...base, '--start', loose], {})).toThrow(
        new UsageError(
          `--start: expected an ISO 8601 date-time with a zone (2026-11-01T09:00:00Z, 2026-11-01T10:00:00+01:00) or a date (2026-11-01, UTC midnight), got "${loose}"`,
        ),
      );
    expect(parseSimulateArgs([...base, '--start', '2026-11-01T10:00:00+01:00'], {}).simulation.start).toBe(
      Date.UTC(2026, 10, 1, 9),
    );
    expect(() => parseSimulateArgs([...base, '--url', 'ftp://x'], {})).toThrow(/--url/);
    expect(() => parseSimulateArgs([...base, '--bogus'], {})).toThrow(UsageError);
    expect(
      parseSimulateArgs([...base, '--other-triggers', ''], {}).simulation.generator?.otherTriggers,
    ).toEqual([]);
  });
});
