// A captured delivery cannot be replayed at will: through the real ingest and router, a signed delivery
// whose webhook.date is older than the platform's retries (or minutes ahead) lands in webhooks.dlq with
// its reason and reaches no entity stream; an operator's redrive of it goes through; webhooks.raw holds
// no signature to replay a delivery with.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signBody } from '../../ingest/webhooks/signature.js';
import { dedupeRouterAppId } from '../../processors/dedupe-router/main.js';
import type { RunningStage } from '../../runtime/streams/stage.js';
import { runRedriveCommand } from '../../tools/cli/commands/redrive.js';
import { testStack } from '../helpers/stack.js';
import { type IngestUnderTest, runIngest } from './ingest-harness.js';
import { ProcessorsHarness, randomPrefix } from './processors-harness.js';

const KEY = 'replay-protection-key-5d2a8f61c7e94b03';
const HOUR = 3_600_000;

function delivery(id: string, date: Date): string {
  return JSON.stringify({
    webhook: { id, trigger: 'UserAdded', date: date.toISOString() },
    query: { variables: { id: `usr_${id}` } },
    data: { getUser: { __typename: 'User', id: `usr_${id}`, email: `${id}@example.com` } },
  });
}

describe('replays of captured deliveries (real ingest and router)', () => {
  const stack = testStack();
  const harness = new ProcessorsHarness(stack, randomPrefix('replays'), 1);
  let ingest: IngestUnderTest | undefined;
  let router: RunningStage | undefined;
  const now = Date.now();
  const bodies = {
    fresh: delivery('wh_fresh', new Date(now - 60_000)),
    replayed: delivery('wh_replayed', new Date(now - 10 * 24 * HOUR)),
    ahead: delivery('wh_ahead', new Date(now + HOUR)),
  };

  const dead = async () =>
    (await harness.read<{ webhookId: string; reason: string }>(harness.names.dlq)).map((r) => [
      r.value!.webhookId,
      r.value!.reason,
    ]);
  const users = async () =>
    (await harness.read<{ webhookId: string }>(harness.names.entity('user'))).map((r) => r.value!.webhookId);
  const caughtUp = () => harness.waitCaughtUp(dedupeRouterAppId(harness.prefix), [harness.names.raw]);

  beforeAll(async () => {
    await harness.setUp();
    ingest = await runIngest({
      ...stack,
      prefix: harness.prefix,
      sources: { energy: { keys: { k1: KEY } } },
    });
    router = await harness.startRouter();
    for (const body of Object.values(bodies)) {
      const response = await ingest.post('/webhooks/energy', body, {
        'content-type': 'application/json',
        'x-signature': signBody(body, KEY),
      });
      expect(response.status).toBe(200);
    }
    await caughtUp();
  }, 120_000);

  afterAll(async () => {
    await router?.close();
    await ingest?.close();
  });

  it('routes a fresh delivery, and dead-letters an old replay (too-old) and a dated-ahead one (from-the-future)', async () => {
    expect(await users()).toEqual(['wh_fresh']);
    expect((await dead()).sort()).toEqual([
      ['wh_ahead', 'from-the-future'],
      ['wh_replayed', 'too-old'],
    ]);
  });

  it('keeps no signature in webhooks.raw: a reader of it has nothing to replay a delivery with', async () => {
    const raw = await harness.read<{ headers: Record<string, string> }>(harness.names.raw);
    expect(raw).toHaveLength(3);
    for (const record of raw) expect(record.value!.headers['x-signature']).toBeUndefined();
  });

  it('routes the old delivery once an operator redrives it', async () => {
    const printed: string[] = [];
    const code = await runRedriveCommand(['--reason', 'too-old'], {
      stdout: { write: (text: string) => printed.push(text) },
      stderr: { write: () => true },
      env: harness.environment(),
    });
    expect(code).toBe(0);
    expect(printed.join('')).toMatch(/sent\s+1 to .*webhooks\.raw/);
    await caughtUp();
    expect((await users()).sort()).toEqual(['wh_fresh', 'wh_replayed']);
    // The one dated ahead stays dead-lettered: nobody redrove it.
    expect(await users()).not.toContain('wh_ahead');
  });

  it('answers a replay of the raw record itself (same bytes, same signature) as a duplicate, not a new event', async () => {
    const response = await ingest!.post('/webhooks/energy', bodies.fresh, {
      'content-type': 'application/json',
      'x-signature': signBody(bodies.fresh, KEY),
    });
    expect(response.status).toBe(200);
    await caughtUp();
    expect((await users()).filter((id) => id === 'wh_fresh')).toHaveLength(1);
  });
});
