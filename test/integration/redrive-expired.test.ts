// hookledger redrive against the real broker and router: a dead letter older than the dedupe window may
// name an id the router has forgotten, so a redrive skips it unless told no earlier redrive sent it; the
// records it does send are written while it reads, not once it has read everything.
//
// The letters are written to webhooks.dlq directly with the record time of an old dead-lettering (the
// router writes a dead letter at its raw record's time). One of them was routed by an emulated redrive
// 7.5 days ago: its decision is past the window, so the router would route it again if it came back.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildDeadLetter, type DlqReason } from '../../processors/dedupe-router/dead-letter.js';
import { REDRIVE_HEADER } from '../../processors/dedupe-router/dedupe-processor.js';
import { dedupeRouterAppId } from '../../processors/dedupe-router/main.js';
import { type OutRecord, writeRecords } from '../../runtime/kafka/write-records.js';
import type { RunningStage } from '../../runtime/streams/stage.js';
import type { RawEnvelope } from '../../schemas/raw-envelope.js';
import { valueSubject } from '../../schemas/topics.js';
import { runRedriveCommand } from '../../tools/cli/commands/redrive.js';
import { type RedriveOptions, type RedriveProgress, redrive } from '../../tools/redrive/redrive.js';
import { testStack } from '../helpers/stack.js';
import { storedDeliveries } from '../unit/processors/fixtures.js';
import { ProcessorsHarness, randomPrefix, runInProcess } from './processors-harness.js';

const DAY = 86_400_000;

describe('hookledger redrive of dead letters older than the dedupe window', () => {
  const harness = new ProcessorsHarness(testStack(), randomPrefix('redrive-expired'));
  const firsts = storedDeliveries().filter(
    (d) => d.delivery.expect.duplicateOf === undefined && !d.delivery.expect.topics.includes('webhooks.dlq'),
  );
  const users = firsts.filter((d) => d.delivery.expect.topics.includes('entity.user')).map((d) => d.envelope);
  /** Dead-lettered 8 days ago, then routed by a redrive 7.5 days ago. */
  const redriven = users[0]!;
  /** Dead-lettered 8 days ago, never redriven. */
  const never = users[1]!;
  /** Dead-lettered a day ago: within the window. */
  const recent = firsts
    .map((d) => d.envelope)
    .filter((e) => e !== redriven && e !== never)
    .slice(0, 6);
  const now = Date.now();
  let router: RunningStage | undefined;

  const userEvents = async (envelope: RawEnvelope) =>
    (await harness.read<{ webhookId: string }>(harness.names.entity('user'))).filter(
      (r) => r.value?.webhookId === envelope.webhookId,
    );
  const caughtUp = () => harness.waitCaughtUp(dedupeRouterAppId(harness.prefix), [harness.names.raw]);

  /** What the route checks wrote when they dead-lettered each first delivery: its letter, and the delivery in webhooks.unique. */
  async function letters(entries: { envelope: RawEnvelope; reason: DlqReason; at: number }[]) {
    const schemaId = await harness.serde.latestSchemaId(valueSubject(harness.names.dlq));
    const uniqueSchemaId = await harness.serde.latestSchemaId(valueSubject(harness.names.unique));
    const records: OutRecord[] = [];
    const firsts: OutRecord[] = [];
    for (const { envelope, reason, at } of entries) {
      records.push({
        // Keyed as raw: the partitioner puts it on the raw record's partition number, as the router does.
        key: envelope.webhookId,
        value: await harness.serde.encode(
          schemaId,
          buildDeadLetter(envelope, reason, 'a rule a fix relaxed', 'dedupe-router.route'),
        ),
        timestamp: at,
      });
      firsts.push({
        key: envelope.webhookId,
        value: await harness.serde.encode(uniqueSchemaId, envelope),
        timestamp: at,
      });
    }
    await writeRecords(harness.settings, harness.names.dlq, records);
    await writeRecords(harness.settings, harness.names.unique, firsts);
  }

  const run = (args: string[]) => runInProcess(runRedriveCommand, args, harness.environment());

  /** The recent `data-missing` letters redriven in chunks of two, with progress at every record. */
  const redriveInChunksOfTwo = (options: Pick<RedriveOptions, 'onProgress' | 'signal'>) =>
    redrive({
      settings: harness.settings,
      serde: harness.serde,
      prefix: harness.prefix,
      filter: { reasons: ['data-missing'] },
      dedupeWindowMs: 7 * DAY,
      chunk: { records: 2, bytes: 1_048_576, waitMs: 60_000 },
      progressEveryMs: 0,
      ...options,
    });

  const redrivenRuns = async () => {
    const runs: string[] = [];
    for (const record of await harness.read(harness.names.raw, { decode: false })) {
      const run = record.headers[REDRIVE_HEADER];
      if (run !== undefined) runs.push(run.toString('utf8'));
    }
    return runs;
  };

  beforeAll(async () => {
    await harness.setUp();
    await letters([
      { envelope: redriven, reason: 'record-invalid', at: now - 8 * DAY },
      { envelope: never, reason: 'too-old', at: now - 8 * DAY },
    ]);
    // The earlier redrive, 7.5 days ago: the router routes the id then, and forgets it 7 days later.
    await harness.produceRaw([redriven], {
      timestamps: [now - 7.5 * DAY],
      headers: { [REDRIVE_HEADER]: 'redrive-earlier' },
    });
    router = await harness.startRouter();
    await caughtUp();
  });

  afterAll(async () => {
    await router?.close();
  });

  it('starts with the id the earlier redrive routed once in its entity stream', async () => {
    expect(await userEvents(redriven)).toHaveLength(1);
    expect(await userEvents(never)).toHaveLength(0);
  });

  it('counts the old letters as expired on a dry run, and names the flag', async () => {
    const { code, text } = await run(['--dry-run', '--json']);
    expect(code).toBe(0);
    expect(JSON.parse(text)).toMatchObject({
      read: 2,
      sent: 0,
      skippedExpired: 2,
      dedupeWindowMs: 7 * DAY,
      includeExpired: false,
    });
    const summary = await run(['--dry-run']);
    expect(summary.text).toMatch(/would send\s+0 /);
    expect(summary.text).toMatch(/skipped\s+2 expired: .*DEDUPE_WINDOW − 1h \(7d − 1h\)/);
    expect(summary.text).toContain('--include-expired');
  });

  it('skips them without --include-expired, so the id routed by the earlier redrive is not routed twice', async () => {
    const { code, text } = await run([]);
    expect(code).toBe(0);
    expect(text).toMatch(/sent\s+0 to /);
    await caughtUp();
    expect(await redrivenRuns()).toEqual(['redrive-earlier']);
    expect(await userEvents(redriven)).toHaveLength(1);
  });

  it('sends them with --include-expired: a letter never redriven reaches its entity stream once, and webhooks.unique holds its first delivery once', async () => {
    const { code, text } = await run(['--include-expired', '--reason', 'too-old']);
    expect(code).toBe(0);
    expect(text).toMatch(/sent\s+1 to /);
    expect(text).toContain('expired       included (--include-expired)');
    await caughtUp();
    expect(await redrivenRuns()).toHaveLength(2);
    expect(await userEvents(never)).toHaveLength(1);
    const unique = (await harness.read(harness.names.unique)).filter((r) => r.key === never.webhookId);
    expect(unique).toHaveLength(1);
  });

  it('writes what it selects in chunks while it reads, and reports read and sent on the way', async () => {
    expect(recent).toHaveLength(6);
    await letters(recent.map((envelope) => ({ envelope, reason: 'data-missing', at: now - DAY })));
    const seen: RedriveProgress[] = [];
    const result = await redriveInChunksOfTwo({ onProgress: (progress) => seen.push(progress) });
    expect(result).toMatchObject({ read: 8, sent: 6, skippedByFilter: 2, skippedExpired: 0 });
    const during = seen.slice(0, -1);
    // Sent counts what the brokers acknowledged: chunks of two, written before the read was over.
    expect(during.some((p) => p.sent > 0 && p.read < result.read)).toBe(true);
    for (const p of during) expect(p.sent % 2).toBe(0);
    expect(seen.at(-1)).toMatchObject({ read: 8, sent: 6 });
    expect((await redrivenRuns()).filter((run) => run === result.runId)).toHaveLength(6);
    expect(seen.at(-1)!.done).toBe(seen.at(-1)!.total);
  });

  it('stops at Ctrl-C after the chunk under way, with what went through counted, and says it was interrupted', async () => {
    const controller = new AbortController();
    const result = await redriveInChunksOfTwo({
      // The first chunk of two is acknowledged; then Ctrl-C.
      onProgress: (progress) => {
        if (progress.sent > 0) controller.abort(new Error('interrupted'));
      },
      signal: controller.signal,
    });
    expect(result).toMatchObject({ interrupted: true, sent: 2 });
    expect(result.read).toBeLessThan(8);
    expect((await redrivenRuns()).filter((run) => run === result.runId)).toHaveLength(2);
  });
});
