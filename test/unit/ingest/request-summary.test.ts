// At info, ingest logs requests by status per interval rather than a line per request.
import { Counter, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { countsByStatus, countsSince, startRequestSummary } from '../../../ingest/request-summary.js';
import { capturingLogger } from './fakes.js';

describe("ingest's request summary", () => {
  it('sums the counter over sources, by status, and keeps only what is new', () => {
    const now = countsByStatus([
      { labels: { source: 'a', status: '200' }, value: 5 },
      { labels: { source: 'b', status: '200' }, value: 2 },
      { labels: { source: 'a', status: '401' }, value: 1 },
    ]);
    expect(now).toEqual({ '200': 7, '401': 1 });
    expect(countsSince(now, { '200': 4, '401': 1 })).toEqual({ '200': 3 });
  });

  it('logs one line per interval with requests in it, and the rest when stopped', async () => {
    const requests = new Counter({
      name: 'requests_total',
      help: 'h',
      labelNames: ['source', 'status'] as const,
      registers: [new Registry()],
    });
    const { logger, text } = capturingLogger();
    const summary = startRequestSummary({ requests, logger, intervalMs: 20 });
    requests.inc({ source: 'a', status: '200' }, 3);
    requests.inc({ source: 'a', status: '503' });
    await new Promise((r) => setTimeout(r, 70));
    requests.inc({ source: 'a', status: '200' });
    await summary.stop();
    const lines = text()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      .filter((l) => l.msg === 'requests answered');
    expect(lines.map((l) => l.byStatus)).toEqual([{ '200': 3, '503': 1 }, { '200': 1 }]);
    expect(lines[0]).toMatchObject({ level: 30, total: 4 });
  });
});
