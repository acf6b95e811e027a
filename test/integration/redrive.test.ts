// hookledger redrive against the real broker: a delivery dead-lettered by a router rule that a fix
// relaxed reaches its entity stream once after a redrive, and a second redrive adds nothing.
//
// No router rule can be relaxed without a code change (routing is a pure function of the envelope),
// so the test emulates the deploy of a fix: a router whose routing has one extra rule (it dead-letters
// the target delivery as record-invalid; injected through dedupeTopology's `route` option) runs first
// on the live group, then the real router takes over the same group, state and topics.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REDRIVE_HEADER, REDRIVE_STAGE_HEADER } from '../../processors/dedupe-router/dedupe-processor.js';
import { dedupeRouterAppId } from '../../processors/dedupe-router/main.js';
import type { RunningStage } from '../../runtime/streams/stage.js';
import { CommandFailed } from '../../tools/cli/command.js';
import { runRedriveCommand } from '../../tools/cli/commands/redrive.js';
import { testStack } from '../helpers/stack.js';
import { storedDeliveries } from '../unit/processors/fixtures.js';
import { ProcessorsHarness, randomPrefix, runInProcess } from './processors-harness.js';
import { startRouterBeforeFix } from './router-with-route.js';

describe('hookledger redrive after a fix', () => {
  const harness = new ProcessorsHarness(testStack(), randomPrefix('redrive'));
  const deliveries = storedDeliveries();
  const target = deliveries.find(
    (d) => d.delivery.expect.topics.includes('entity.user') && d.delivery.expect.duplicateOf === undefined,
  )!.envelope;
  let router: RunningStage | undefined;

  const userEvents = async () =>
    (await harness.read<{ webhookId: string }>(harness.names.entity('user'))).filter(
      (r) => r.value?.webhookId === target.webhookId,
    );

  const redrive = (args: string[] = []) => runInProcess(runRedriveCommand, args, harness.environment());

  beforeAll(async () => {
    await harness.setUp();
    await harness.produceRaw(deliveries.map((d) => d.envelope));
    // The router before the fix: the target is dead-lettered by a rule the fix removes.
    router = await startRouterBeforeFix(harness, new Set([target.webhookId]), {
      why: 'a rule the fix relaxes',
      clientId: 'it-router-before-fix',
    });
    await harness.waitCaughtUp(dedupeRouterAppId(harness.prefix), [harness.names.raw]);
    await router.close();
    // The fix is deployed: the real router takes over the group, its state and its topics.
    router = await harness.startRouter();
  });

  afterAll(async () => {
    await router?.close();
  });

  it('starts with the delivery dead-lettered and absent from its entity stream', async () => {
    const dlq = (await harness.read<{ reason: string; webhookId: string }>(harness.names.dlq)).filter(
      (r) => r.value?.webhookId === target.webhookId,
    );
    expect(dlq.map((r) => r.value?.reason)).toEqual(['record-invalid']);
    expect(await userEvents()).toHaveLength(0);
  });

  it('sends nothing on a dry run', async () => {
    const before = await harness.read(harness.names.raw, { decode: false });
    const { code, text } = await redrive(['--reason', 'record-invalid', '--dry-run']);
    expect(code).toBe(0);
    expect(text).toContain('dry run');
    expect(text).toMatch(/would send\s+1 /);
    expect(await harness.read(harness.names.raw, { decode: false })).toHaveLength(before.length);
  });

  it('says the same as one JSON object with --json', async () => {
    const { code, text } = await redrive(['--reason', 'record-invalid', '--dry-run', '--json']);
    expect(code).toBe(0);
    expect(JSON.parse(text)).toMatchObject({
      dryRun: true,
      sent: 1,
      selected: { 'record-invalid': 1 },
      runId: expect.stringMatching(/^redrive-/),
    });
  });

  it('brings the delivery to its entity stream once, and not to webhooks.unique again', async () => {
    const { code, text } = await redrive(['--reason', 'record-invalid']);
    expect(code).toBe(0);
    expect(text).toMatch(/sent\s+1 to .*webhooks\.raw/);
    await harness.waitCaughtUp(dedupeRouterAppId(harness.prefix), [harness.names.raw]);
    expect(await userEvents()).toHaveLength(1);
    const unique = (await harness.read(harness.names.unique)).filter((r) => r.key === target.webhookId);
    expect(unique).toHaveLength(1);
  });

  it('adds nothing when redriven again (a new run of an id routed since is a duplicate)', async () => {
    const { code, text } = await redrive(['--reason', 'record-invalid']);
    expect(code).toBe(0);
    expect(text).toMatch(/sent\s+1 /);
    await harness.waitCaughtUp(dedupeRouterAppId(harness.prefix), [harness.names.raw]);
    expect(await userEvents()).toHaveLength(1);
    // Both redriven records are in raw, each with its own run id.
    const runs = new Set<string>();
    const stages = new Set<string>();
    for (const record of await harness.read(harness.names.raw, { decode: false })) {
      const run = record.headers[REDRIVE_HEADER];
      if (run !== undefined) runs.add(run.toString('utf8'));
      const stage = record.headers[REDRIVE_STAGE_HEADER];
      if (stage !== undefined) stages.add(stage.toString('utf8'));
    }
    expect(runs.size).toBe(2);
    // The letter's stage goes with it: the router writes webhooks.unique only for the stream kit's letters.
    expect([...stages]).toEqual(['dedupe-router.route']);
  });

  it('ends with exit code 130 and says it was interrupted when Ctrl-C came before the read was over', async () => {
    const controller = new AbortController();
    controller.abort(new Error('interrupted'));
    const printed: string[] = [];
    const code = await runRedriveCommand([], {
      stdout: { write: (text: string) => printed.push(text) },
      stderr: { write: () => true },
      env: harness.environment(),
      signal: controller.signal,
    });
    expect(code).toBe(130);
    expect(printed.join('')).toMatch(
      /interrupted {3}before the end of webhooks\.dlq[\s\S]*sent {6} {4}0 to webhooks\.raw/,
    );
  });

  it('fails with one line on a bad option', async () => {
    await expect(redrive(['--from', 'yesterday'])).rejects.toThrow(/--from: expected an ISO 8601 time/);
  });

  it('fails with one line, registering nothing, under a prefix whose topics do not exist', async () => {
    const prefix = randomPrefix('redrive-none');
    const env = { ...harness.environment(), TOPIC_PREFIX: prefix };
    const failed = runInProcess(runRedriveCommand, [], env);
    await expect(failed).rejects.toBeInstanceOf(CommandFailed);
    await expect(failed).rejects.toThrow(
      `topic ${prefix}webhooks.dlq does not exist: run \`hookledger topics\` first`,
    );
    await expect(harness.serde.latestSchemaId(`${prefix}webhooks.raw-value`)).rejects.toMatchObject({
      status: 404,
    });
  });
});
