// hookledger quarantine promote against the real broker and router: a quarantined request received so
// long ago that another attempt of its id, routed before, may have left the router's memory is held back
// unless the operator says no other attempt was accepted; a recent one is promoted and is a duplicate.
//
// The quarantined requests are written to webhooks.quarantine directly, with the receivedAt and record
// time of an old refusal (ingest keeps a request at its receivedAt). One webhook id was accepted 7.5
// days ago and routed then; its platform retry 72 h later was quarantined, 4.5 days ago: its routing is
// past the window now, so the router would route the id again if the retry were promoted.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signBody } from '../../ingest/webhooks/signature.js';
import { dedupeRouterAppId } from '../../processors/dedupe-router/main.js';
import { type OutRecord, writeRecords } from '../../runtime/kafka/write-records.js';
import type { RunningStage } from '../../runtime/streams/stage.js';
import type { QuarantinedRequest } from '../../schemas/quarantined-request.js';
import type { RawEnvelope } from '../../schemas/raw-envelope.js';
import { valueSubject } from '../../schemas/topics.js';
import { runQuarantineCommand } from '../../tools/cli/commands/quarantine.js';
import { PROMOTE_HEADER } from '../../tools/quarantine/promote.js';
import { testStack } from '../helpers/stack.js';
import { ProcessorsHarness, randomPrefix, runInProcess } from './processors-harness.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const KEY = 'the-key-the-platform-signs-with-0123456789abcdef0123456789';
const SOURCES = { energy: { keys: { k2026b: KEY } } };

interface Attempt {
  webhookId: string;
  body: Buffer;
  date: number;
}

function attempt(webhookId: string, date: number): Attempt {
  const body = JSON.stringify({
    webhook: { id: webhookId, trigger: 'UserAdded', date: new Date(date).toISOString() },
    query: {
      api: 'https://api.platform.example/v1/graphql',
      query: 'query User',
      variables: { id: `usr_${webhookId}` },
    },
    data: { getUser: { __typename: 'User', id: `usr_${webhookId}` } },
  });
  return { webhookId, body: Buffer.from(body), date };
}

describe('quarantine promote of requests older than the router remembers their ids for', () => {
  const harness = new ProcessorsHarness(testStack(), randomPrefix('quarantine-expired'));
  const names = harness.names;
  const now = Date.now();
  /** Accepted and routed 7.5 days ago; its retry 72 h later was quarantined. */
  const routed = attempt('wh_routed', now - 7.5 * DAY);
  /** Quarantined 4.5 days ago, no attempt of it ever accepted. */
  const never = attempt('wh_never', now - 7.5 * DAY);
  /** Accepted 2 days ago, its retry quarantined a day ago: the router still knows it. */
  const fresh = attempt('wh_fresh', now - 2 * DAY);
  let router: RunningStage | undefined;

  const accepted = (a: Attempt): RawEnvelope => ({
    webhookId: a.webhookId,
    source: 'energy',
    trigger: 'UserAdded',
    webhookDate: new Date(a.date).toISOString(),
    receivedAt: a.date,
    body: a.body,
    headers: { 'content-type': 'application/json' },
    query: null,
    verifiedKeyId: 'k2026b',
    ingestId: randomUUID(),
  });

  async function quarantine(entries: { attempt: Attempt; receivedAt: number }[]) {
    const schemaId = await harness.serde.latestSchemaId(valueSubject(names.quarantine));
    const records: OutRecord[] = [];
    for (const { attempt: a, receivedAt } of entries) {
      const held: QuarantinedRequest = {
        webhookId: a.webhookId,
        source: 'energy',
        trigger: 'UserAdded',
        webhookDate: new Date(a.date).toISOString(),
        receivedAt,
        body: a.body,
        headers: { 'content-type': 'application/json', 'x-signature': signBody(a.body, KEY) },
        query: null,
        reason: 'mismatch',
        triedKeyIds: ['k2026a'],
        ingestId: randomUUID(),
      };
      records.push({
        key: a.webhookId,
        value: await harness.serde.encode(schemaId, held),
        timestamp: receivedAt,
      });
    }
    await writeRecords(harness.settings, names.quarantine, records);
  }

  const command = (args: string[]) =>
    runInProcess(
      runQuarantineCommand,
      args,
      harness.environment({ HOOKLEDGER_SOURCES: JSON.stringify(SOURCES) }),
    );

  const userEvents = async (a: Attempt) =>
    (await harness.read<{ webhookId: string }>(names.entity('user'))).filter(
      (r) => r.value?.webhookId === a.webhookId,
    );
  const promotedIds = async () =>
    (await harness.read(names.raw, { decode: false }))
      .filter((r) => r.headers[PROMOTE_HEADER] !== undefined)
      .map((r) => r.key)
      .sort();
  const caughtUp = () => harness.waitCaughtUp(dedupeRouterAppId(harness.prefix), [names.raw]);

  beforeAll(async () => {
    await harness.setUp();
    await harness.produceRaw([accepted(routed), accepted(fresh)], { timestamps: [routed.date, fresh.date] });
    await quarantine([
      { attempt: routed, receivedAt: routed.date + 72 * HOUR },
      { attempt: never, receivedAt: never.date + 72 * HOUR },
      { attempt: fresh, receivedAt: now - DAY },
    ]);
    router = await harness.startRouter();
    await caughtUp();
  });

  afterAll(async () => {
    await router?.close();
  });

  it('starts with the accepted attempts routed once each', async () => {
    expect(await userEvents(routed)).toHaveLength(1);
    expect(await userEvents(fresh)).toHaveLength(1);
    expect(await userEvents(never)).toHaveLength(0);
  });

  it('counts the old requests as expired on a dry run, with the limit and the flag', async () => {
    const { code, text } = await command(['promote', '--source', 'energy', '--dry-run']);
    expect(code).toBe(0);
    expect(text).toMatch(/would promote\s+1 to webhooks\.raw \(k2026b 1\)/);
    expect(text).toMatch(
      /expired\s+2 received over 93\.9 h ago = DEDUPE_WINDOW − WEBHOOK_MAX_AGE − WEBHOOK_MAX_AHEAD − 1h \(7d − 73h − 5m − 1h\)/,
    );
    expect(text).toContain('--include-expired');
    expect(await promotedIds()).toEqual([]);
  });

  it('holds them back without --include-expired, so the id routed 7.5 days ago is not routed twice', async () => {
    const { code, text } = await command(['promote', '--source', 'energy']);
    expect(code).toBe(0);
    expect(text).toMatch(/promoted\s+1 to webhooks\.raw \(k2026b 1\)/);
    expect(text).toMatch(/expired\s+2 received over/);
    expect(await promotedIds()).toEqual(['wh_fresh']);
    await caughtUp();
    expect(await userEvents(routed)).toHaveLength(1);
    expect(await userEvents(never)).toHaveLength(0);
    // Promoted within the limit: the router still knows the id, so it is a duplicate.
    expect(await userEvents(fresh)).toHaveLength(1);
    const listed = await command(['list', '--source', 'energy']);
    expect(listed.text).toMatch(/wh_routed\s+mismatch\s+k2026a\s+held/);
    expect(listed.text).toMatch(/wh_never\s+mismatch\s+k2026a\s+held/);
  });

  it('promotes them with --include-expired: the operator vouches that no other attempt was accepted', async () => {
    const { code, text } = await command(['promote', '--source', 'energy', '--include-expired']);
    expect(code).toBe(0);
    expect(text).toMatch(/promoted\s+2 to webhooks\.raw \(k2026b 2\)/);
    expect(text).toMatch(/already promoted 1/);
    expect(text).toContain('expired          included (--include-expired)');
    expect(await promotedIds()).toEqual(['wh_fresh', 'wh_never', 'wh_routed']);
    await caughtUp();
    expect(await userEvents(never)).toHaveLength(1);
    expect((await harness.read(names.unique)).filter((r) => r.key === never.webhookId)).toHaveLength(1);
    // What the default guards against: the router forgot the id routed 7.5 days ago and routes it again.
    expect(await userEvents(routed)).toHaveLength(2);
  });
});
