// `hookledger process` as users run it: both stages in one process, its ops endpoints, a poison record
// and a redrive.
import type { ChildProcess } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { REDRIVE_HEADER } from '../../processors/dedupe-router/dedupe-processor.js';
import { dedupeRouterAppId } from '../../processors/dedupe-router/main.js';
import { tablesAppId } from '../../processors/tables/main.js';
import { VERSION } from '../../runtime/version.js';
import { TABLE_STREAMS } from '../../schemas/topics.js';
import { testStack } from '../helpers/stack.js';
import { storedDeliveries } from '../unit/processors/fixtures.js';
import { ProcessorsHarness, randomPrefix, waitReady } from './processors-harness.js';

describe('hookledger process', () => {
  const harness = new ProcessorsHarness(testStack(), randomPrefix('ops'), 2);
  let child: ChildProcess | undefined;
  afterAll(() => {
    if (child?.exitCode === null) child.kill('SIGKILL');
  });

  it('serves /healthz, /readyz once restored and /metrics, and dead-letters a poison record without stopping its partition', async () => {
    await harness.setUp();
    const fixtures = storedDeliveries().map((d) => d.envelope);
    // A record that is not a raw envelope at all, then valid ones on the same partition.
    await harness.produceBytes('poison-1', Buffer.from('not avro at all'), 0);
    await harness.produceRaw(fixtures, { partition: 0 });
    const graphqlErrors = fixtures.find((e) => e.ingestId === 'ingest-graphql-errors')!;

    const running = await harness.spawnProcess([]);
    child = running.child;
    expect((await fetch(`${running.url}/healthz`)).status).toBe(200);
    await waitReady(`${running.url}/readyz`);
    await harness.waitCaughtUp(dedupeRouterAppId(harness.prefix), [harness.names.raw]);

    // A plain retry of a dead-lettered id is a duplicate; a redrive of it is processed once.
    await harness.produceRaw([{ ...graphqlErrors, ingestId: 'retry' }], { partition: 0 });
    await harness.produceRaw([{ ...graphqlErrors, ingestId: 'redrive-1' }], {
      partition: 0,
      headers: { [REDRIVE_HEADER]: 'test' },
    });
    await harness.produceRaw([{ ...graphqlErrors, ingestId: 'redrive-1-again' }], {
      partition: 0,
      headers: { [REDRIVE_HEADER]: 'test' },
    });
    await harness.waitCaughtUp(dedupeRouterAppId(harness.prefix), [harness.names.raw]);
    await harness.waitCaughtUp(
      tablesAppId(harness.prefix),
      TABLE_STREAMS.map((s) => harness.names.entity(s)),
    );

    const dlq = await harness.read<{ reason: string; ingestId: string; body: Buffer }>(harness.names.dlq);
    const poison = dlq.filter((r) => r.value!.reason === 'envelope-undecodable');
    expect(poison).toHaveLength(1);
    expect(poison[0]!.key).toBe('poison-1');
    expect(poison[0]!.value!.body.toString()).toBe('not avro at all');
    // Still bad after the "fix": dead-lettered again by the redrive, once.
    expect(dlq.filter((r) => r.value!.reason === 'graphql-errors').map((r) => r.value!.ingestId)).toEqual([
      'ingest-graphql-errors',
      'redrive-1',
    ]);
    const unique = await harness.read<{ ingestId: string }>(harness.names.unique);
    expect(unique).toHaveLength(fixtures.length - 2);

    const metrics = await (await fetch(`${running.url}/metrics`)).text();
    for (const series of [
      'hookledger_dedupe_records_total{route="routed"}',
      'hookledger_dedupe_records_total{route="dead-lettered"}',
      'hookledger_dedupe_dlq_total{reason="envelope-undecodable"} 1',
      'hookledger_dedupe_dlq_total{reason="graphql-errors"} 2',
      'hookledger_dedupe_duplicates_total{decision="dead-lettered"} 2',
      'hookledger_dedupe_duplicates_total{decision="routed"} 2',
      'hookledger_stream_consumer_lag{app="dedupe-router"',
      'hookledger_stream_transaction_seconds_count{app="dedupe-router"}',
      'hookledger_stream_store_entries{app="dedupe-router",store="dedupe"}',
      'hookledger_dedupe_freshness_seconds_count',
      'hookledger_tables_events_total{table="user",outcome="merged"}',
      'hookledger_stream_partitions{app="tables",status="ready"}',
      // The release that runs, as `hookledger --version` and the start-up log line say it.
      `hookledger_build_info{version="${VERSION}",node="${process.version}"} 1`,
    ]) {
      expect(metrics, series).toContain(series);
    }
    const tracked = /hookledger_stream_store_entries\{app="dedupe-router",store="dedupe"\} (\d+)/.exec(
      metrics,
    );
    // Every id once, and the redrive run's own entry.
    expect(Number(tracked?.[1])).toBe(fixtures.length - 2 + 1);

    // Per delivery: the platform's retries and lateness, by source and trigger (unknown ones "other").
    for (const series of [
      'hookledger_dedupe_duplicates_per_id_count{source="fixtures",trigger="UserAdded"}',
      'hookledger_dedupe_duplicates_per_id_count{source="fixtures",trigger="other"}',
      'hookledger_dedupe_delivery_delay_seconds_count{source="fixtures",trigger="EnergySwitchUpdated"}',
      'hookledger_stream_ready{app="dedupe-router"} 1',
      'hookledger_stream_ready{app="tables"} 1',
    ]) {
      expect(metrics, series).toContain(series);
    }
    const total = (series: RegExp) => [...metrics.matchAll(series)].reduce((sum, m) => sum + Number(m[1]), 0);
    // Every delivery but the poison record and the redrives (the operator's, not the platform's)…
    expect(total(/^hookledger_dedupe_duplicates_per_id_count\{[^}]*\} (\d+)$/gm)).toBe(fixtures.length + 1);
    // …of which the first of each id had no duplicate before it (two fixtures and "retry" are retries).
    expect(total(/^hookledger_dedupe_duplicates_per_id_bucket\{le="0",[^}]*\} (\d+)$/gm)).toBe(
      fixtures.length - 2,
    );

    child.kill('SIGTERM');
    expect(await running.exited).toBe(0);
  });
});
