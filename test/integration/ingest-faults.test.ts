// The broker stopped during a run, on a dedicated broker: 503 within the deadline (never a hang), no 200
// without a record, and once the broker is back new deliveries succeed without restarting ingest.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signBody } from '../../ingest/webhooks/signature.js';
import { type DedicatedBroker, startDedicatedBroker, testStack } from '../helpers/stack.js';
import { createRawTopic, type IngestUnderTest, randomPrefix, readRaw, runIngest } from './ingest-harness.js';

const KEY = 'faults-key-0123456789abcdef0123456789';
const DEADLINE_MS = 3_000;
/** What a 503 may take beyond the deadline: timers and the event loop on a busy two-core machine. */
const SLACK_MS = 1_500;

interface Outcome {
  id: string;
  status: number;
  ms: number;
  retryAfter: string | null;
  ingestId?: string;
}

describe('ingest while the broker goes away and comes back', () => {
  const { registryUrl } = testStack();
  const prefix = randomPrefix('faults');
  let broker: DedicatedBroker;
  let ingest: IngestUnderTest;
  const outcomes: Outcome[] = [];
  let counter = 0;

  async function deliver(): Promise<Outcome> {
    const id = `wh_f${counter++}`;
    const body = JSON.stringify({ webhook: { id, trigger: 'UserAdded', date: new Date().toISOString() } });
    const started = performance.now();
    const response = await ingest.post('/webhooks/energy', body, {
      'content-type': 'application/json',
      'x-signature': signBody(body, KEY),
    });
    const text = await response.text();
    const outcome: Outcome = {
      id,
      status: response.status,
      ms: performance.now() - started,
      retryAfter: response.headers.get('retry-after'),
      ...(response.status === 200 ? { ingestId: (JSON.parse(text) as { ingestId: string }).ingestId } : {}),
    };
    outcomes.push(outcome);
    return outcome;
  }

  const readyz = async () => (await fetch(`${ingest.opsUrl}/readyz`)).status;

  beforeAll(async () => {
    broker = await startDedicatedBroker();
    await createRawTopic(broker.brokers, prefix);
    ingest = await runIngest({
      brokers: broker.brokers,
      registryUrl,
      prefix,
      sources: { energy: { keys: { k1: KEY } } },
      env: { INGEST_DEADLINE_MS: String(DEADLINE_MS) },
    });
  });

  afterAll(async () => {
    await ingest?.close();
    await broker?.dispose();
  });

  it('stores while the broker is up', async () => {
    const before = await Promise.all(Array.from({ length: 20 }, deliver));
    expect(before.map((o) => o.status)).toEqual(before.map(() => 200));
    expect(await readyz()).toBe(200);
  });

  it('answers 503 with Retry-After within the deadline while the broker is down, and turns unready', async () => {
    await broker.stopKafka();
    const down: Outcome[] = [];
    let sawUnready = false;
    const until = Date.now() + 4 * DEADLINE_MS;
    while (Date.now() < until) {
      down.push(...(await Promise.all(Array.from({ length: 5 }, deliver))));
      if ((await readyz()) === 503) sawUnready = true;
    }
    const refused = down.filter((o) => o.status !== 200);
    expect(refused.length).toBeGreaterThan(0);
    for (const o of refused) {
      expect(o.status).toBe(503);
      expect(o.retryAfter).not.toBeNull();
    }
    for (const o of down) expect(o.ms).toBeLessThan(DEADLINE_MS + SLACK_MS);
    expect(sawUnready).toBe(true);
    // Known down for longer than a deadline: the late ones are refused at once.
    expect(refused.at(-1)!.ms).toBeLessThan(DEADLINE_MS);
  });

  it('stores again once the broker is back, without restarting ingest', async () => {
    await broker.startKafka();
    const end = Date.now() + 90_000;
    let first: Outcome | undefined;
    while (Date.now() < end) {
      const o = await deliver();
      expect(o.ms).toBeLessThan(DEADLINE_MS + SLACK_MS);
      if (o.status === 200) {
        first = o;
        break;
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(first, 'no 200 within 90 s of the broker restarting').toBeDefined();
    const after = await Promise.all(Array.from({ length: 20 }, deliver));
    expect(after.map((o) => o.status)).toEqual(after.map(() => 200));
    expect(await readyz()).toBe(200);
  });

  it('has a record for every 200', async () => {
    const records = await readRaw(broker.brokers, registryUrl, ingest.rawTopic);
    const stored = new Set(records.map((r) => r.envelope.ingestId));
    const answered200 = outcomes.filter((o) => o.status === 200);
    expect(answered200.length).toBeGreaterThan(40);
    for (const o of answered200) expect(stored.has(o.ingestId!), `${o.id} answered 200`).toBe(true);
  });
});
