// The quarantine against the real broker and registry: deliveries signed with a key ingest does not
// know yet are refused (401) and kept; once the key is configured, `quarantine promote` sends each
// authentic one to webhooks.raw once, the router puts each on its entity stream once, forged ones stay
// where they are, a second promotion adds nothing, and a flood cannot get past a source's bound.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseSources } from '../../ingest/sources.js';
import { signBody } from '../../ingest/webhooks/signature.js';
import { dedupeRouterAppId } from '../../processors/dedupe-router/main.js';
import type { RunningStage } from '../../runtime/streams/stage.js';
import type { QuarantinedRequest } from '../../schemas/quarantined-request.js';
import type { RawEnvelope } from '../../schemas/raw-envelope.js';
import { envelopeMaxMessageBytes } from '../../schemas/topics.js';
import { routerMemory, runQuarantineCommand } from '../../tools/cli/commands/quarantine.js';
import { PROMOTE_HEADER, promote } from '../../tools/quarantine/promote.js';
import { testStack } from '../helpers/stack.js';
import { type IngestUnderTest, runIngest } from './ingest-harness.js';
import { ProcessorsHarness, randomPrefix } from './processors-harness.js';

const OLD_KEY = 'the-key-ingest-has-0123456789abcdef0123456789';
const NEW_KEY = 'the-key-the-platform-signs-with-0123456789abcdef0123456789';
const FLOOD_KEY = 'flooded-source-key-0123456789abcdef0123456789';
/** As ingest runs during the mix-up: the platform already signs with a key it does not know. */
const SOURCES_BEFORE = {
  energy: { keys: { k2026a: OLD_KEY } },
  flooded: { keys: { f1: FLOOD_KEY } },
  resumed: { keys: { r1: OLD_KEY } },
  sandbox: { signature: 'none' },
};
/** After the fix: the new key configured beside the old one. */
const SOURCES_AFTER = { ...SOURCES_BEFORE, energy: { keys: { k2026a: OLD_KEY, k2026b: NEW_KEY } } };
/** 0.5 requests/s with a minute's burst: 30 requests per source, then about one every 2 s. */
const BURST = 30;

/** Dated minutes ago, as the platform's deliveries of this key mix-up are: the router checks their age. */
const DATED_FROM = Date.now() - 10 * 60_000;

function userAdded(n: number): string {
  return JSON.stringify({
    webhook: {
      id: `wh_q${n}`,
      trigger: 'UserAdded',
      date: new Date(DATED_FROM + n * 1_000).toISOString(),
    },
    query: {
      api: 'https://api.platform.example/v1/graphql',
      query: 'query User',
      variables: { id: `usr_q${n}` },
    },
    data: { getUser: { __typename: 'User', id: `usr_q${n}` } },
  });
}

describe('the quarantine: a key mix-up loses nothing', () => {
  const stack = testStack();
  const harness = new ProcessorsHarness(stack, randomPrefix('quarantine'));
  const names = harness.names;
  let ingest: IngestUnderTest | undefined;
  let router: RunningStage | undefined;
  const authentic = [1, 2, 3].map(userAdded);
  const forged = userAdded(4);

  const send = (source: string, body: string, key: string) =>
    ingest!.post(`/webhooks/${source}`, body, {
      'content-type': 'application/json',
      'x-signature': signBody(body, key),
    });

  async function quarantined(source?: string): Promise<QuarantinedRequest[]> {
    const records = await harness.read<QuarantinedRequest>(names.quarantine);
    return records.map((r) => r.value!).filter((q) => source === undefined || q.source === source);
  }

  async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, ms = 30_000): Promise<T> {
    const end = Date.now() + ms;
    for (;;) {
      const value = await read();
      if (done(value) || Date.now() > end) return value;
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  async function command(args: string[], sources: unknown = SOURCES_AFTER) {
    const printed: string[] = [];
    const code = await runQuarantineCommand(args, {
      stdout: { write: (text: string) => printed.push(text) },
      env: harness.environment({
        HOOKLEDGER_SOURCES: JSON.stringify(sources),
        INGEST_UNSIGNED_SOURCES: 'sandbox',
      }),
    });
    return { code, text: printed.join('') };
  }

  const startIngest = (sources: unknown) =>
    runIngest({
      brokers: stack.brokers,
      registryUrl: stack.registryUrl,
      prefix: harness.prefix,
      sources,
      env: { INGEST_QUARANTINE_PER_SECOND: '0.5', INGEST_QUARANTINE_BYTES_PER_SECOND: '1048576' },
    });

  const userEvents = async () =>
    (await harness.read<{ webhookId: string }>(names.entity('user')))
      .filter((r) => r.key.startsWith('energy/'))
      .map((r) => r.value!.webhookId);

  beforeAll(async () => {
    await harness.setUp();
    ingest = await startIngest(SOURCES_BEFORE);
  });

  afterAll(async () => {
    await router?.close();
    await ingest?.close();
  });

  it('refuses deliveries signed with a key not configured yet (401) and keeps them, never in webhooks.raw', async () => {
    for (const body of [...authentic, authentic[0]!]) {
      const response = await send('energy', body, NEW_KEY);
      expect(response.status).toBe(401);
      expect(((await response.json()) as { code: string }).code).toBe('INGEST_ERR_SIGNATURE');
    }
    expect((await send('energy', forged, 'an-attackers-key')).status).toBe(401);
    const held = await until(
      () => quarantined('energy'),
      (q) => q.length >= 5,
    );
    expect(held.map((q) => q.webhookId).sort()).toEqual(['wh_q1', 'wh_q1', 'wh_q2', 'wh_q3', 'wh_q4']);
    for (const q of held) {
      expect(q).toMatchObject({
        source: 'energy',
        reason: 'mismatch',
        triedKeyIds: ['k2026a'],
        trigger: 'UserAdded',
      });
      expect(q.headers['x-signature']).toMatch(/^sha1=/);
    }
    expect(await harness.read(names.raw, { decode: false })).toHaveLength(0);
  });

  it('never keeps what unknown or insecure sources get', async () => {
    expect((await send('nobody', userAdded(5), NEW_KEY)).status).toBe(404);
    expect((await send('sandbox', userAdded(6), NEW_KEY)).status).toBe(200);
    const all = await quarantined();
    expect(all.filter((q) => q.source !== 'energy')).toEqual([]);
  });

  it('lists what is held: id, time, reason, key ids tried, never a key', async () => {
    const { code, text } = await command(['list', '--source', 'energy', '--reason', 'mismatch']);
    expect(code).toBe(0);
    expect(text).toMatch(/wh_q1\s+mismatch\s+k2026a\s+held/);
    expect(text).toContain('5 quarantined request(s): 5 held, 0 promoted');
    expect(text).not.toContain(OLD_KEY);
    expect(text).not.toContain(NEW_KEY);
  });

  it('counts on a dry run and sends nothing', async () => {
    const { code, text } = await command(['promote', '--source', 'energy', '--dry-run']);
    expect(code).toBe(0);
    expect(text).toMatch(/would promote\s+3 to webhooks\.raw \(k2026b 3\)/);
    expect(text).toMatch(/still refused\s+1 \(mismatch 1\)/);
    expect(await harness.read(names.raw, { decode: false })).toHaveLength(1); // the sandbox delivery
  });

  it('after the key is added, promotes each authentic delivery once; each reaches its entity stream once', async () => {
    // The operator adds the key to ingest too: the platform's next retry of wh_q1 gets through by itself.
    await ingest!.close();
    ingest = await startIngest(SOURCES_AFTER);
    expect((await send('energy', authentic[0]!, NEW_KEY)).status).toBe(200);

    const { code, text } = await command(['promote', '--source', 'energy']);
    expect(code).toBe(0);
    expect(text).toMatch(/promoted\s+3 to webhooks\.raw \(k2026b 3\) with hookledger-promote: promote-/);
    expect(text).toMatch(/repeats\s+1 /);
    expect(text).toMatch(/still refused\s+1 \(mismatch 1\)/);

    const promoted = (await harness.read<RawEnvelope>(names.raw)).filter((r) => r.headers[PROMOTE_HEADER]);
    expect(promoted.map((r) => r.key).sort()).toEqual(['wh_q1', 'wh_q2', 'wh_q3']);
    const held = await quarantined('energy');
    for (const record of promoted) {
      expect(record.value).toMatchObject({ source: 'energy', verifiedKeyId: 'k2026b', trigger: 'UserAdded' });
      // The same request: its ingest id and arrival time are the quarantined request's.
      expect(held.map((q) => q.ingestId)).toContain(record.value!.ingestId);
    }

    router = await harness.startRouter();
    await harness.waitCaughtUp(dedupeRouterAppId(harness.prefix), [names.raw]);
    // wh_q1 came twice (the retry through ingest, the promotion): a duplicate, so once.
    expect((await userEvents()).sort()).toEqual(['wh_q1', 'wh_q2', 'wh_q3']);
  });

  it('leaves forged requests in the quarantine, and lists the others as promoted', async () => {
    const { text } = await command(['list', '--source', 'energy']);
    expect(text).toMatch(/wh_q4\s+mismatch\s+k2026a\s+held/);
    expect(text).toMatch(/wh_q2\s+mismatch\s+k2026a\s+promoted promote-/);
    expect(text).toContain('5 quarantined request(s): 1 held, 4 promoted');
    expect((await userEvents()).filter((id) => id === 'wh_q4')).toEqual([]);
    const json = await command(['list', '--source', 'energy', '--json']);
    const listed = JSON.parse(json.text) as { webhookId: string; promotedBy: string | null }[];
    expect(listed).toHaveLength(5);
    expect(listed.find((r) => r.webhookId === 'wh_q4')).toMatchObject({
      reason: 'mismatch',
      promotedBy: null,
    });
    expect(listed.find((r) => r.webhookId === 'wh_q2')?.promotedBy).toMatch(/^promote-/);
    expect(json.text).not.toContain(NEW_KEY);
  });

  it('promotes nothing twice when run again', async () => {
    const rawBefore = (await harness.read(names.raw, { decode: false })).length;
    const { code, text } = await command(['promote', '--source', 'energy']);
    expect(code).toBe(0);
    expect(text).toMatch(/promoted\s+0 to webhooks\.raw/);
    expect(text).toMatch(/already promoted 4/);
    expect(await harness.read(names.raw, { decode: false })).toHaveLength(rawBefore);
    await harness.waitCaughtUp(dedupeRouterAppId(harness.prefix), [names.raw]);
    expect((await userEvents()).sort()).toEqual(['wh_q1', 'wh_q2', 'wh_q3']);
  });

  it("holds a source's bound under a flood, answering every request 401, and leaves other sources their share", async () => {
    const flood = Array.from(
      { length: 200 },
      (_, i) => `{"webhook":{"id":"flood-${i}"},"pad":"${'x'.repeat(500)}"}`,
    );
    const started = Date.now();
    const answers = await Promise.all(flood.map((body) => send('flooded', body, 'wrong-key')));
    const seconds = (Date.now() - started) / 1000;
    expect(answers.map((a) => a.status)).toEqual(Array(200).fill(401));
    const ceiling = BURST + Math.ceil(seconds * 0.5) + 1;
    // Wait for what was kept to land, then check nothing beyond the bound did.
    await new Promise((r) => setTimeout(r, 2_000));
    const kept = await quarantined('flooded');
    expect(kept.length).toBeGreaterThanOrEqual(BURST);
    expect(kept.length).toBeLessThanOrEqual(ceiling);

    const metrics = await (await fetch(`${ingest!.opsUrl}/metrics`)).text();
    const dropped = Number(
      /hookledger_ingest_quarantine_dropped_total\{source="flooded",reason="over-rate"\} (\d+)/.exec(
        metrics,
      )?.[1],
    );
    const stored = Number(/hookledger_ingest_quarantined_total\{source="flooded"\} (\d+)/.exec(metrics)?.[1]);
    expect(stored).toBe(kept.length);
    expect(dropped + stored).toBe(200);

    // energy's bucket is its own: a refused delivery of it is still kept.
    const before = (await quarantined('energy')).length;
    expect((await send('energy', userAdded(7), 'yet-another-key')).status).toBe(401);
    const after = await until(
      () => quarantined('energy'),
      (q) => q.length > before,
    );
    expect(after).toHaveLength(before + 1);
  });

  it('refuses to promote an unknown or an insecure source, in one line', async () => {
    await expect(command(['promote', '--source', 'nobody'])).rejects.toThrow(
      /source "nobody" is not configured/,
    );
    await expect(command(['promote', '--source', 'sandbox'])).rejects.toThrow(/declared insecure/);
    await expect(command(['promote'])).rejects.toThrow(/--source <name> is required/);
    await expect(command(['list', '--reason', 'bogus'])).rejects.toThrow(/--reason: expected one of/);
  });

  it('resumes a run that stopped half-way: each request is promoted once', async () => {
    const bodies = [11, 12, 13, 14, 15].map(userAdded);
    for (const body of bodies) expect((await send('resumed', body, NEW_KEY)).status).toBe(401);
    await until(
      () => quarantined('resumed'),
      (q) => q.length >= 5,
    );
    const sources = { ...SOURCES_AFTER, resumed: { keys: { r1: OLD_KEY, r2: NEW_KEY } } };
    // A run that dies after two committed transactions of one record each: the third encode fails.
    let encodes = 0;
    const dying = {
      ...harness.serde,
      encode: async (schemaId: number, value: unknown) => {
        if (++encodes === 3) throw new Error('the process died here');
        return harness.serde.encode(schemaId, value);
      },
    };
    await expect(
      promote({
        settings: harness.settings,
        serde: dying,
        prefix: harness.prefix,
        source: parseSources(JSON.stringify(sources)).get('resumed')!,
        transactionTimeoutMs: 10_000,
        maxMessageBytes: envelopeMaxMessageBytes(1_048_576),
        memory: routerMemory(harness.config()),
        recordsPerTransaction: 1,
      }),
    ).rejects.toThrow('the process died here');
    const promotedKeys = async () =>
      (await harness.read(names.raw, { decode: false }))
        .filter((r) => r.headers[PROMOTE_HEADER] && /^wh_q1\d$/.test(r.key))
        .map((r) => r.key)
        .sort();
    expect(await promotedKeys()).toHaveLength(2);

    const { code, text } = await command(['promote', '--source', 'resumed'], sources);
    expect(code).toBe(0);
    expect(text).toMatch(/promoted\s+3 to webhooks\.raw \(r2 3\)/);
    expect(text).toMatch(/already promoted 2/);
    expect(await promotedKeys()).toEqual(['wh_q11', 'wh_q12', 'wh_q13', 'wh_q14', 'wh_q15']);
  });

  it('keeps nothing when turned off (INGEST_QUARANTINE=false): the answer stays 401', async () => {
    const off = await runIngest({
      brokers: stack.brokers,
      registryUrl: stack.registryUrl,
      prefix: harness.prefix,
      sources: SOURCES_AFTER,
      env: { INGEST_QUARANTINE: 'false' },
    });
    try {
      const before = (await quarantined()).length;
      const body = userAdded(20);
      const response = await off.post('/webhooks/energy', body, {
        'content-type': 'application/json',
        'x-signature': signBody(body, 'not-a-configured-key'),
      });
      expect(response.status).toBe(401);
      const metrics = await (await fetch(`${off.opsUrl}/metrics`)).text();
      expect(metrics).not.toMatch(/hookledger_ingest_quarantine(d|_dropped)_total\{/);
      await new Promise((r) => setTimeout(r, 1_000));
      expect(await quarantined()).toHaveLength(before);
    } finally {
      await off.close();
    }
  });
});
