// The tables stage restarted between a deletion and the late add that must not resurrect it: the
// merge state (deletion markers, field candidates) comes back from its changelog.
import { Registry } from 'prom-client';
import { afterAll, describe, expect, it } from 'vitest';
import { dedupeRouterAppId, startDedupeRouter } from '../../processors/dedupe-router/main.js';
import { startTables, tablesAppId } from '../../processors/tables/main.js';
import type { RunningStage } from '../../runtime/streams/stage.js';
import { TABLE_STREAMS } from '../../schemas/topics.js';
import { testStack } from '../helpers/stack.js';
import { manifest, storedDeliveries } from '../unit/processors/fixtures.js';
import { ProcessorsHarness, quietLogger, randomPrefix } from './processors-harness.js';

describe('the tables stage, restarted', () => {
  const stages: RunningStage[] = [];
  afterAll(async () => {
    for (const stage of stages.splice(0)) await stage.close();
  });

  it('restores its merge state, so the late add after a restart still cannot resurrect the deleted user', async () => {
    const harness = new ProcessorsHarness(testStack(), randomPrefix('tables'), 2);
    await harness.setUp();
    const deliveries = storedDeliveries();
    const cut = deliveries.findIndex((d) => d.delivery.name === 'user-deleted') + 1;
    const config = harness.config();
    const registry = () => new Registry();
    const caughtUp = async () => {
      await harness.waitCaughtUp(dedupeRouterAppId(harness.prefix), [harness.names.raw]);
      await harness.waitCaughtUp(
        tablesAppId(harness.prefix),
        TABLE_STREAMS.map((s) => harness.names.entity(s)),
      );
    };

    stages.push(await startDedupeRouter({ config, logger: quietLogger(), registry: registry() }));
    const first = await startTables({ config, logger: quietLogger(), registry: registry() });
    await harness.produceRaw(deliveries.slice(0, cut).map((d) => d.envelope));
    await caughtUp();
    await first.close();

    stages.push(await startTables({ config, logger: quietLogger(), registry: registry() }));
    await harness.produceRaw(deliveries.slice(cut).map((d) => d.envelope));
    await caughtUp();

    for (const [table, rows] of Object.entries(manifest.finalTables)) {
      const records = await harness.read<{ fields: Record<string, string | null> }>(
        `${harness.prefix}${table}`,
      );
      const latest = new Map<string, Record<string, string | null> | null>();
      for (const r of records) latest.set(r.key, r.value === null ? null : r.value.fields);
      for (const [key, expected] of Object.entries(rows)) {
        const actual = latest.get(key);
        if (expected === null) expect(actual, `${table} ${key}`).toBeNull();
        else
          expect(Object.fromEntries(Object.keys(expected).map((f) => [f, actual?.[f]])), key).toEqual(
            expected,
          );
      }
    }
  });
});
