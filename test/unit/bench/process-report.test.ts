// `npm run bench:process -- --json`: the headline figures as one JSON object, and the restore's ratio
// to the JVM consumer in the Markdown report.
import { describe, expect, it } from 'vitest';
import { fanOutOf, fanOutTopics } from '../../../tools/bench/process-passthrough.js';
import {
  medianBy,
  medianRestore,
  type Report,
  type Restored,
  renderReport,
  reproducibleArgv,
  routerOnlyJson,
  type StageFigures,
  summaryJson,
} from '../../../tools/bench/process-report.js';
import type { Window } from '../../../tools/bench/process-run.js';

const window = (records: number, seconds: number, workerCpu: number): Window => ({
  records,
  seconds,
  transactions: 10,
  commitSeconds: 0.1,
  workerCpu,
  brokerCpu: 1,
  machineBusy: 2,
  startupSeconds: 1,
  totalRecords: records,
  hrFromUs: 0,
  hrToUs: 1,
  load1: 1.5,
  peakRssMiB: 200,
});
const stage = (records: number, seconds: number, workerCpu: number): StageFigures => ({
  window: window(records, seconds, workerCpu),
  lifeCpu: workerCpu + 1,
});
const restored = (durationMs: number): Restored => ({
  type: 'restored',
  records: 200_000,
  ids: 200_000,
  durationMs,
  firstRecordMs: durationMs - 100,
  cpuSeconds: 1,
  hrFromUs: 0,
  hrToUs: 1,
  load1: 2,
});

function report(over: Partial<Report> = {}): Report {
  return {
    ids: 200_000,
    retries: 20_000,
    total: 220_000,
    partitions: 6,
    meanValueBytes: 442,
    brokers: ['127.0.0.1:9092'],
    registryUrl: 'http://registry',
    brokerPid: 1,
    memoryIds: 1_000,
    perf: {
      fetchRecordsPerSec: 400_000,
      recordsPerSec: 300_000,
      records: 220_000,
      seconds: 0.55,
      wallSeconds: 3,
      toolCpu: 2,
      brokerCpu: 0.2,
      machineBusy: 3,
      output: '',
      load1: 1,
    },
    bare: stage(200_000, 4, 2),
    router: stage(200_000, 20, 10),
    tables: { ...stage(100_000, 5, 2), endOffsets: 100_010 },
    restore: restored(1_000),
    heap: 44,
    argv: ['--ids', '200000'],
    ...over,
  };
}

describe('the JSON summary of bench:process', () => {
  it('holds the figures dashboards read, as numbers', () => {
    const json = JSON.parse(JSON.stringify(summaryJson(report())));
    expect(json).toMatchObject({
      router: { eventsPerSecond: 10_000, cpuMicrosPerEvent: 50 },
      passThrough: { recordsPerSecond: 50_000, cpuMicrosPerRecord: 10 },
      tables: { eventsPerSecond: 20_000 },
      restore: { recordsPerSecond: 200_000, vsJvmConsumer: 0.5 },
      jvmConsumer: { recordsPerSecond: 400_000 },
    });
    for (const [part, field] of [
      ['router', 'eventsPerSecond'],
      ['router', 'cpuMicrosPerEvent'],
      ['passThrough', 'recordsPerSecond'],
      ['passThrough', 'cpuMicrosPerRecord'],
      ['tables', 'eventsPerSecond'],
      ['restore', 'recordsPerSecond'],
      ['jvmConsumer', 'recordsPerSecond'],
    ] as const) {
      expect(typeof json[part][field], `${part}.${field}`).toBe('number');
    }
  });

  it('is one line of JSON, and says null for a figure not measured (never NaN)', () => {
    const text = JSON.stringify(summaryJson(report({ heap: Number.NaN })));
    expect(text).not.toContain('\n');
    expect(JSON.parse(text).heapBytesPerId).toBeNull();
  });

  it('gives every restore of the run and takes the median', () => {
    const runs = [restored(2_000), restored(1_000), restored(4_000)];
    const median = medianRestore(runs);
    expect(median.durationMs).toBe(2_000);
    const json = summaryJson(report({ restore: median, restoreRuns: runs }));
    expect(json.restore.recordsPerSecond).toBe(100_000);
    expect(json.restore.runs).toEqual([100_000, 200_000, 50_000]);
  });

  it('gives every run of the JVM consumer, and measures the restore against their median', () => {
    const runs = [
      { fetchRecordsPerSec: 533_000 },
      { fetchRecordsPerSec: 239_000 },
      { fetchRecordsPerSec: 400_000 },
    ];
    const median = medianBy(runs, (run) => run.fetchRecordsPerSec);
    expect(median.fetchRecordsPerSec).toBe(400_000);
    const base = report();
    const json = summaryJson(
      report({
        restore: restored(800),
        perf: { ...base.perf, ...median, runs: runs.map((r) => r.fetchRecordsPerSec) },
      }),
    );
    expect(json.jvmConsumer).toEqual({ recordsPerSecond: 400_000, runs: [533_000, 239_000, 400_000] });
    expect(json.restore.vsJvmConsumer).toBeCloseTo(250_000 / 400_000);
    expect(renderReport(report({ perf: { ...base.perf, runs: [1, 2, 3] } }))).toContain(
      'the median of 3 run(s)',
    );
  });
});

describe('the Markdown report of bench:process', () => {
  it("judges the restore against the JVM consumer's rate in the same run", () => {
    const met = renderReport(report({ restore: restored(800) }));
    expect(met).toContain(
      "changelog restore ≥ 0.6× the JVM consumer's read rate in the same run (issue #20): 250000 / 400000 = 0.63×: **met**",
    );
    const runs = [restored(2_000), restored(1_000), restored(4_000)];
    const notMet = renderReport(report({ restore: medianRestore(runs), restoreRuns: runs }));
    expect(notMet).toContain('= 0.25×: **not met** (median of 3 restores: 100000, 200000, 50000 records/s)');
  });
});

describe('the reproduce line', () => {
  it('leaves out --broker-pid, a pid of the machine that ran it, and keeps every other argument', () => {
    expect(reproducibleArgv(['--json', '--broker-pid', '9650', '--ids', '20000'])).toEqual([
      '--json',
      '--ids',
      '20000',
    ]);
    expect(reproducibleArgv(['--broker-pid=9650', '--no-write'])).toEqual(['--no-write']);
    expect(reproducibleArgv([])).toEqual([]);
  });
});

describe("the pass-through writing the router's records", () => {
  it("writes what the router writes for the bench's load: 2.88 records a record read, nothing for a retry", () => {
    const topics = fanOutTopics('p.');
    const value = Buffer.alloc(465, 7);
    const written = new Map<string, { records: number; bytes: number }>();
    // 66 records: every combination of the 11-record retry cycle and the 6 entity kinds once.
    for (let index = 0; index < 66; index++) {
      const message = { value, key: Buffer.from(`wh_${index}`), partition: 0, offset: index } as never;
      for (const [topic, bytes] of fanOutOf(message, topics, index)) {
        const sum = written.get(topic) ?? { records: 0, bytes: 0 };
        written.set(topic, { records: sum.records + 1, bytes: sum.bytes + bytes.length });
      }
    }
    expect(written.get('p.fanout.unique')).toEqual({ records: 60, bytes: 60 * 465 });
    expect(written.get('p.fanout.changelog')?.records).toBe(60);
    expect(written.get('p.fanout.commission')).toEqual({ records: 10, bytes: 10 * 373 });
    for (const [n, entity] of topics.entities.entries())
      expect(written.get(entity), entity).toEqual({ records: 10, bytes: 10 * (n === 2 ? 465 : 225) });
    const records = [...written.values()].reduce((sum, w) => sum + w.records, 0);
    expect(records / 66).toBeCloseTo((200_000 * 3 + 200_000 / 6) / 220_000, 2);
  });

  it('is reported beside the router, as JSON and in the Markdown', () => {
    const fanOut = stage(200_000, 8, 4);
    const json = summaryJson(report({ bareFanOut: fanOut }));
    expect(json).toMatchObject({
      passThroughFanOut: { recordsPerSecond: 25_000, cpuMicrosPerRecord: 20 },
      routerVsFanOut: 0.4,
      routerCpuVsFanOut: 2.5,
    });
    expect(summaryJson(report())).not.toHaveProperty('passThroughFanOut');
    expect(routerOnlyJson({ ...report(), bareFanOut: fanOut })).toMatchObject({
      routerVsFanOut: 0.4,
      routerCpuVsFanOut: 2.5,
    });
    expect(renderReport(report({ bareFanOut: fanOut }))).toContain(
      "writing the router's records alone costs 20.0 µs a record read (2.00× the floor), so the router's own work is 30.0 µs/event",
    );
  });
});
