// The status line of `hookledger start`, from the services' own series.
import { Counter, Gauge, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { readStatus, statusFrom, statusLine } from '../../../../tools/cli/start/status.js';

describe('the start status line', () => {
  it('counts received over every answer, stored as the 200s, routed as routed and failures', () => {
    const status = statusFrom({
      requests: {
        values: [
          { value: 340, labels: { source: 'local', status: '200' } },
          { value: 7, labels: { source: 'local', status: '401' } },
          { value: 2, labels: { source: '(unknown)', status: '404' } },
        ],
      },
      decisions: {
        values: [
          { value: 280, labels: { route: 'routed' } },
          { value: 6, labels: { route: 'failure' } },
          { value: 14, labels: { route: 'dead-lettered' } },
        ],
      },
      duplicates: { values: [{ value: 40, labels: { decision: 'routed' } }] },
      failedRecords: {
        values: [
          { value: 1, labels: { app: 'tables', outcome: 'dead-lettered' } },
          // Already among the router's 14 dead-lettered decisions (its dead-letter hook counts them).
          { value: 2, labels: { app: 'dedupe-router', outcome: 'dead-lettered' } },
        ],
      },
      lag: {
        values: [
          { value: 3, labels: { app: 'dedupe-router', partition: '0' } },
          { value: 2, labels: { app: 'tables', partition: '1' } },
        ],
      },
    });
    expect(status).toEqual({
      received: 349,
      stored: 340,
      routed: 286,
      duplicates: 40,
      deadLettered: 15,
      lag: 5,
    });
    expect(statusLine(status)).toBe(
      'received 349 · stored 340 · routed 286 · duplicates 40 · dead-lettered 15 · lag 5',
    );
  });

  it('shows zeros before any series exists', () => {
    expect(statusLine(statusFrom({}))).toBe(
      'received 0 · stored 0 · routed 0 · duplicates 0 · dead-lettered 0 · lag 0',
    );
  });

  it('reads the series from the registries that hold them', async () => {
    const ingest = new Registry();
    const processors = new Registry();
    new Counter({
      name: 'hookledger_ingest_requests_total',
      help: 'h',
      labelNames: ['source', 'status'],
      registers: [ingest],
    }).inc({ source: 'local', status: '200' }, 3);
    new Gauge({
      name: 'hookledger_stream_consumer_lag',
      help: 'h',
      labelNames: ['app', 'topic', 'partition'],
      registers: [processors],
    }).set({ app: 'dedupe-router', topic: 'webhooks.raw', partition: '0' }, 4);
    const status = await readStatus([processors, ingest]);
    expect(status).toMatchObject({ received: 3, stored: 3, lag: 4, routed: 0 });
  });
});
