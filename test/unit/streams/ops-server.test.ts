import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { type OpsServer, startOpsServer } from '../../../runtime/streams/ops-server.js';

describe('the stream apps’ ops server', () => {
  let server: OpsServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('answers /readyz 503 naming the partition whose restore keeps failing, and its last error', async () => {
    let readiness = {
      ready: false,
      reasons: [
        'webhooks.raw[2] restoring: restore failed 3 times, retrying (last error: changelog unreachable)',
      ],
    };
    server = await startOpsServer({
      host: '127.0.0.1',
      port: 0,
      registry: new Registry(),
      checks: { 'dedupe-router': () => readiness, tables: () => true },
    });
    const unready = await fetch(`${server.url}/readyz`);
    expect(unready.status).toBe(503);
    expect(await unready.json()).toEqual({
      ready: false,
      checks: { accepting: true, 'dedupe-router': false, tables: true },
      reasons: {
        'dedupe-router': [
          'webhooks.raw[2] restoring: restore failed 3 times, retrying (last error: changelog unreachable)',
        ],
      },
    });

    readiness = { ready: true, reasons: [] };
    const ready = await fetch(`${server.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({
      ready: true,
      checks: { accepting: true, 'dedupe-router': true, tables: true },
    });
  });

  it('shows the bytes each stage keeps on disk, restoring or ready, and the restore progress as a reason', async () => {
    let readiness = {
      ready: false,
      reasons: ['webhooks.raw[0] restoring: 1200 of 5000 changelog records'],
      stateDiskBytes: 4_096,
    };
    server = await startOpsServer({
      host: '127.0.0.1',
      port: 0,
      registry: new Registry(),
      checks: { 'dedupe-router': () => readiness, tables: () => true },
    });
    expect(await (await fetch(`${server.url}/readyz`)).json()).toEqual({
      ready: false,
      checks: { accepting: true, 'dedupe-router': false, tables: true },
      reasons: { 'dedupe-router': ['webhooks.raw[0] restoring: 1200 of 5000 changelog records'] },
      stateDiskBytes: { 'dedupe-router': 4_096 },
    });
    readiness = { ready: true, reasons: [], stateDiskBytes: 8_192 };
    expect(await (await fetch(`${server.url}/readyz`)).json()).toEqual({
      ready: true,
      checks: { accepting: true, 'dedupe-router': true, tables: true },
      stateDiskBytes: { 'dedupe-router': 8_192 },
    });
  });

  it('shows how far behind each standby copy is, without making the stage unready', async () => {
    server = await startOpsServer({
      host: '127.0.0.1',
      port: 0,
      registry: new Registry(),
      checks: {
        'dedupe-router': () => ({ ready: true, standbyLag: { 'webhooks.dedupe-changelog[1]': 42 } }),
      },
    });
    const answer = await fetch(`${server.url}/readyz`);
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({
      ready: true,
      checks: { accepting: true, 'dedupe-router': true },
      standbyLag: { 'dedupe-router': { 'webhooks.dedupe-changelog[1]': 42 } },
    });
  });
});
