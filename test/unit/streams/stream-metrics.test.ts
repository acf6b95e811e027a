// The stream kit's scrape-time gauges, read from a fake app: readiness per app.
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createStreamMetrics } from '../../../runtime/streams/metrics.js';
import type { StreamApp } from '../../../runtime/streams/stream-runner.js';

function fakeApp(ready: () => boolean): StreamApp {
  return {
    isReady: ready,
    readiness: () => ({ ready: ready(), reasons: [] }),
    tasks: () => [],
    stopped: new Promise(() => {}),
    failure: () => undefined,
    close: async () => {},
  };
}

describe('the stream kit’s gauges', () => {
  it('show each watched app ready (1) or not (0) as /readyz does, at every scrape', async () => {
    const registry = new Registry();
    let routerReady = false;
    createStreamMetrics({ app: 'dedupe-router', registry }).watch(fakeApp(() => routerReady));
    createStreamMetrics({ app: 'tables', registry }).watch(fakeApp(() => true));
    expect(await registry.metrics()).toContain('hookledger_stream_ready{app="dedupe-router"} 0');
    routerReady = true;
    const text = await registry.metrics();
    expect(text).toContain('hookledger_stream_ready{app="dedupe-router"} 1');
    expect(text).toContain('hookledger_stream_ready{app="tables"} 1');
  });

  it('show the records each standby copy is behind, per changelog partition followed', async () => {
    const registry = new Registry();
    let lag = [{ topic: 'webhooks.dedupe-changelog', partition: 1, behind: 42 }];
    createStreamMetrics({ app: 'dedupe-router', registry }).watch({
      ...fakeApp(() => true),
      standbyLag: () => lag,
    });
    expect(await registry.metrics()).toContain(
      'hookledger_stream_standby_lag_records{app="dedupe-router",topic="webhooks.dedupe-changelog",partition="1"} 42',
    );
    // A partition no longer followed (the instance owns it now) leaves the series.
    lag = [];
    expect(await registry.metrics()).not.toContain('hookledger_stream_standby_lag_records{');
  });
});
