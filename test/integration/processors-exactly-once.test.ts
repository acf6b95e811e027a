// Exactly once in webhooks.unique and the entity streams under retries, re-serialized duplicates and
// reordering; and ids forgotten after the window, by stream time, restore included.
import { afterEach, describe, expect, it } from 'vitest';
import { dedupeRouterAppId } from '../../processors/dedupe-router/main.js';
import type { RunningStage } from '../../runtime/streams/stage.js';
import { testStack } from '../helpers/stack.js';
import { expectExactlyOnce, ProcessorsHarness, randomPrefix } from './processors-harness.js';
import { bodyFor, generateLoad } from './processors-load.js';

describe('the dedupe-router, exactly once', () => {
  const stages: RunningStage[] = [];
  afterEach(async () => {
    for (const stage of stages.splice(0)) await stage.close();
  });

  it('passes thousands of deliveries with retries, re-serialized duplicates and reordering exactly once', async () => {
    const harness = new ProcessorsHarness(testStack(), randomPrefix('eos'), 4);
    await harness.setUp();
    const load = generateLoad({ ids: 3_000, retries: 1_500 });
    await harness.produceRaw(load.envelopes);
    stages.push(await harness.startRouter());
    await harness.waitCaughtUp(dedupeRouterAppId(harness.prefix), [harness.names.raw]);
    await expectExactlyOnce(harness, load.ids);
  });

  const hour = 3_600_000;

  /**
   * A at t0, B at t0+70h, then C at t0+80h moves stream time past A's window, not B's; a fresh router
   * restores the changelog, then A and B come again at t0+81h. Returns the ingest ids in webhooks.unique.
   */
  async function routeRestoreRoute(t0: number): Promise<string[]> {
    const harness = new ProcessorsHarness(testStack(), randomPrefix('window'), 1, {
      DEDUPE_WINDOW: '72h',
      WEBHOOK_MAX_AGE: '72h',
      // No date ahead of receipt, so a window of exactly the age limit is a valid one (runtime/config.ts).
      WEBHOOK_MAX_AHEAD: '0s',
    });
    await harness.setUp(72 * hour);
    const envelope = (id: string, at: number) => ({
      webhookId: id,
      source: 'window',
      trigger: null,
      webhookDate: null,
      receivedAt: at,
      // Dated a minute before it arrives: routed, never too old, whenever the test runs.
      body: Buffer.from(JSON.stringify(bodyFor(id, 0, new Date(at - 60_000).toISOString()))),
      headers: {},
      query: null,
      verifiedKeyId: null,
      ingestId: `${id}@${at}`,
    });
    const start = () => harness.startRouter();
    const caughtUp = () => harness.waitCaughtUp(dedupeRouterAppId(harness.prefix), [harness.names.raw]);

    await harness.produceRaw([
      envelope('wh_a', t0),
      envelope('wh_b', t0 + 70 * hour),
      envelope('wh_c', t0 + 80 * hour),
    ]);
    stages.push(await start());
    await caughtUp();
    await stages.pop()!.close();

    await harness.produceRaw([envelope('wh_a', t0 + 81 * hour), envelope('wh_b', t0 + 81 * hour)]);
    stages.push(await start());
    await caughtUp();
    const unique = await harness.read<{ webhookId: string; ingestId: string }>(harness.names.unique);
    return unique.map((r) => r.value!.ingestId).sort();
  }

  /** A is routed again (older than the window at the restored stream time), B is remembered. */
  const expected = (t0: number) =>
    [`wh_a@${t0}`, `wh_a@${t0 + 81 * hour}`, `wh_b@${t0 + 70 * hour}`, `wh_c@${t0 + 80 * hour}`].sort();

  it('forgets ids older than the window by stream time, after a restore too', async () => {
    const t0 = Date.now() - 82 * hour;
    expect(await routeRestoreRoute(t0)).toEqual(expected(t0));
  });

  it('restores by its decisions’ times while it catches up on month-old records', async () => {
    // The changelog is stamped when written (the broker deletes it by that time: a decision stamped with
    // its month-old record's time went as soon as its segment rolled), and a restore takes stream time
    // from the decisions. Taken from the records' stamps, the restored stream time was now, past B's window.
    const t0 = Date.now() - 30 * 24 * hour;
    expect(await routeRestoreRoute(t0)).toEqual(expected(t0));
  });
});
