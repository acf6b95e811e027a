// The stream kit's failure policy on a real broker: a delivery the router throws on is dead-lettered as
// processor-error and its partition goes on; a backlog bigger than one fetch that all fails is no crash.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { dedupeRouterAppId } from '../../processors/dedupe-router/main.js';
import { route } from '../../processors/dedupe-router/route.js';
import type { Logger } from '../../runtime/log.js';
import type { StreamApp } from '../../runtime/streams/stream-runner.js';
import type { RawEnvelope } from '../../schemas/raw-envelope.js';
import { testStack } from '../helpers/stack.js';
import { ProcessorsHarness, randomPrefix } from './processors-harness.js';
import { generateLoad } from './processors-load.js';
import { type Routing, startRouterWithRoute } from './router-with-route.js';

/** Each test fails on its own, naming what it waited for, within this. */
const STEP_TIMEOUT_MS = 60_000;

/** Changes a topic's config as an operator would, with Kafka's own kafka-configs tool. */
async function alterTopicConfig(harness: ProcessorsHarness, topic: string, config: string): Promise<void> {
  await promisify(execFile)(process.execPath, [
    'tools/cli/hookledger.js',
    ...['stack', 'kafka-tool', 'configs', '--bootstrap-server', harness.stack.brokers.join(',')],
    ...['--alter', '--entity-type', 'topics', '--entity-name', topic, '--add-config', config],
  ]);
}

/** A delivery like `template` under another id, with `bytes` of padding: its outputs are that much larger. */
function padded(template: RawEnvelope, id: string, bytes: number): RawEnvelope {
  const body = JSON.parse(template.body.toString());
  body.webhook.id = id;
  return {
    ...template,
    webhookId: id,
    body: Buffer.from(JSON.stringify({ ...body, padding: 'x'.repeat(bytes) })),
  };
}

const startRouter = (harness: ProcessorsHarness, decide: Routing, logger?: Logger) =>
  startRouterWithRoute(harness, decide, {
    clientId: 'it-failure-policy',
    instanceId: 'it-failure-policy',
    ...(logger === undefined ? {} : { logger }),
  });

/**
 * With the router running: routes `before`, lowers webhooks.unique's max.message.bytes to `limit`, then
 * routes `after`, each until the router has caught up.
 */
async function routeAroundLoweredLimit(
  harness: ProcessorsHarness,
  before: RawEnvelope[],
  limit: number,
  after: RawEnvelope[],
): Promise<void> {
  const caughtUp = () =>
    harness.waitCaughtUp(dedupeRouterAppId(harness.prefix), [harness.names.raw], STEP_TIMEOUT_MS);
  await harness.produceRaw(before);
  await caughtUp();
  await alterTopicConfig(harness, harness.names.unique, `max.message.bytes=${limit}`);
  await harness.produceRaw(after);
  await caughtUp();
}

/**
 * The router dead-lettered exactly `tooLarge` (output-too-large), routed each of `ids` to webhooks.unique
 * once, and runs on.
 */
async function expectOnlyTooLarge(
  harness: ProcessorsHarness,
  app: StreamApp,
  tooLarge: string,
  ids: readonly string[],
): Promise<void> {
  const dlq = await harness.read<{ reason: string; webhookId: string }>(harness.names.dlq);
  expect(dlq.map((r) => [r.value!.webhookId, r.value!.reason])).toEqual([[tooLarge, 'output-too-large']]);
  const unique = await harness.read<{ webhookId: string }>(harness.names.unique);
  expect(unique.map((r) => r.value!.webhookId).sort()).toEqual([...ids].sort());
  expect(app.failure()).toBeUndefined();
}

describe('the stream kit’s failure policy', () => {
  const apps: StreamApp[] = [];
  afterEach(async () => {
    for (const app of apps.splice(0)) await app.close();
  });

  it('dead-letters a delivery its processor throws on as processor-error, and its partition goes on', async () => {
    const harness = new ProcessorsHarness(testStack(), randomPrefix('throws'), 1);
    await harness.setUp();
    const load = generateLoad({ ids: 200, retries: 50 });
    const bad = load.ids[17]!;
    const app = await startRouter(harness, (envelope) => {
      if (envelope.webhookId === bad) throw new Error('a bug for this one delivery');
      return route(envelope);
    });
    apps.push(app);
    await harness.produceRaw(load.envelopes);
    await harness.waitCaughtUp(dedupeRouterAppId(harness.prefix), [harness.names.raw], STEP_TIMEOUT_MS);
    const dlq = await harness.read<{ reason: string; webhookId: string; stage: string }>(harness.names.dlq);
    // Once, although its retries came too: the id is remembered as dead-lettered.
    expect(dlq.map((r) => [r.value!.webhookId, r.value!.reason, r.value!.stage])).toEqual([
      [bad, 'processor-error', 'dedupe-router.process'],
    ]);
    const unique = await harness.read<{ webhookId: string }>(harness.names.unique);
    expect(new Set(unique.map((r) => r.value!.webhookId))).toEqual(
      new Set(load.ids.filter((id) => id !== bad)),
    );
    expect(unique).toHaveLength(load.ids.length - 1);
    expect(app.failure()).toBeUndefined();
  }, 120_000);

  it('reads the size limits again when the broker refuses a record for its size, and dead-letters only that record', async () => {
    const harness = new ProcessorsHarness(testStack(), randomPrefix('shrunk'), 1);
    await harness.setUp();
    const app = await startRouter(harness, route);
    apps.push(app);
    const before = generateLoad({ ids: 10, retries: 0, run: 'before' });
    const after = generateLoad({ ids: 10, retries: 0, run: 'after' });
    const big = padded(after.envelopes[3]!, 'wh-big', 150_000);
    // An operator lowers webhooks.unique's max.message.bytes while the router runs: the limits it read at
    // its start no longer hold, so the broker refuses the large record at the commit. Before, the batch
    // was aborted and retried with the same stale limit for ever (the partition stalled).
    await routeAroundLoweredLimit(harness, before.envelopes, 100_000, [
      ...after.envelopes.slice(0, 5),
      big,
      ...after.envelopes.slice(5),
    ]);

    await expectOnlyTooLarge(harness, app, 'wh-big', [...before.ids, ...after.ids]);
  }, 180_000);

  it('keeps its batches under a small max.message.bytes set before it started', async () => {
    const harness = new ProcessorsHarness(testStack(), randomPrefix('small'), 1);
    await harness.setUp();
    // The broker applies a topic's limit to a whole batch, and librdkafka does not split a batch it
    // refuses: with its default batch size (1 MB) a few small records to this topic stalled the router.
    await alterTopicConfig(harness, harness.names.unique, 'max.message.bytes=4000');
    const load = generateLoad({ ids: 30, retries: 0 });
    const over = padded(load.envelopes[0]!, 'wh-over', 8_000);
    await harness.produceRaw([...load.envelopes, over]);
    const app = await startRouter(harness, route);
    apps.push(app);
    await harness.waitCaughtUp(dedupeRouterAppId(harness.prefix), [harness.names.raw], STEP_TIMEOUT_MS);

    await expectOnlyTooLarge(harness, app, 'wh-over', load.ids);
  }, 180_000);

  it('renews its producer when a limit lowered while it runs needs smaller batches', async () => {
    const harness = new ProcessorsHarness(testStack(), randomPrefix('lowered'), 1);
    await harness.setUp();
    const lines: { msg: string }[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => lines.push(JSON.parse(line)) });
    const app = await startRouter(harness, route, logger);
    apps.push(app);
    const before = generateLoad({ ids: 5, retries: 0, run: 'before' });
    const after = generateLoad({ ids: 30, retries: 0, run: 'after' });
    const over = padded(after.envelopes[0]!, 'wh-over', 8_000);
    // The running producer batches up to 1 MB: once webhooks.unique takes 4,000 bytes, the broker refuses
    // its batches of these small records whole, on every retry, until a producer sized for the new limit
    // takes over (before, only a producer fenced by chance or a restart did: the partition stalled).
    await routeAroundLoweredLimit(harness, before.envelopes, 4_000, [...after.envelopes, over]);

    await expectOnlyTooLarge(harness, app, 'wh-over', [...before.ids, ...after.ids]);
    // Renewed after the failure that read the new limit, or the next one (the read runs in the background):
    // not after dozens of refused batches.
    expect(
      lines.filter((l) => l.msg.startsWith('the output topics’ max.message.bytes changed')),
    ).toHaveLength(1);
    expect(lines.filter((l) => l.msg === 'transaction aborted').length).toBeLessThan(8);
  }, 180_000);

  it('survives a backlog larger than one fetch that all dead-letters', async () => {
    const harness = new ProcessorsHarness(testStack(), randomPrefix('all-fail'), 2);
    await harness.setUp();
    const load = generateLoad({ ids: 3_000, retries: 0 });
    await harness.produceRaw(load.envelopes);
    const app = await startRouter(harness, () => {
      throw new Error('every delivery fails');
    });
    apps.push(app);
    await harness.waitCaughtUp(dedupeRouterAppId(harness.prefix), [harness.names.raw], STEP_TIMEOUT_MS);
    const dlq = await harness.read<{ reason: string }>(harness.names.dlq);
    expect(dlq).toHaveLength(load.ids.length);
    expect(dlq.every((r) => r.value!.reason === 'processor-error')).toBe(true);
    expect(app.failure()).toBeUndefined();
    expect(app.isReady()).toBe(true);
  }, 120_000);
});
