// The scale-out section of docs/benchmarks.md: the ratio of the two runs' rates, and a loaded machine said so.
import { describe, expect, it } from 'vitest';
import { renderScaleOut, type ScaleRun } from '../../../tools/bench/process-scale.js';

const run = (instances: number, seconds: number, load1: number): ScaleRun => ({
  label: String(instances),
  instances,
  records: 10_000,
  seconds,
  instancesCpu: 0.5,
  brokerCpu: 0.4,
  machineBusy: 1.5,
  perInstance: instances === 1 ? [10_000] : [5_000, 5_000],
  load1,
  peakRssMiB: [100],
});

const setup = { ids: 9_000, retries: 1_000, partitions: 6, stack: 'a stack', argv: [] };

describe('the scale-out report', () => {
  it('writes the ratio of events/s with two instances to one, and the CPU per event of each', () => {
    const text = renderScaleOut([run(1, 4, 0.1), run(2, 2.5, 0.1)], setup);
    expect(text).toContain('Scale-out ratio (2 instances / 1): **1.60×** (4000 against 2500 events/s)');
    expect(text).toContain('CPU per event: 50.0 µs with one instance, 50.0 µs with two');
    expect(text).toContain('`npm run bench:process -- --scale-out`');
    expect(text).not.toContain('Measured under load');
  });

  it('adds the run of one process with stream threads, and its ratio to one instance', () => {
    const threaded: ScaleRun = { ...run(2, 2, 0.1), label: '1 × 2 threads', perInstance: [] };
    const text = renderScaleOut([run(1, 4, 0.1), run(2, 2.5, 0.1), threaded], setup);
    expect(text).toContain('| 1 × 2 threads | 10,000 | 2.0 | 5000 |');
    expect(text).toContain('One process with 2 stream threads / one instance: **2.00×** (5000 events/s)');
    expect(text).toContain('50.0 µs with 2 threads');
    expect(text).toContain('`hookledger process --only dedupe-router --threads 2`');
  });

  it('says the figure was measured under load when the load average exceeded the cores', () => {
    const text = renderScaleOut([run(1, 4, 40), run(2, 4, 41)], setup);
    expect(text).toMatch(/Measured under load: the 1-minute load average was 40\.0 and 41\.0 on \d+ cores/);
  });
});
