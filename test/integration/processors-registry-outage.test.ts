// The dedupe-router while the schema registry is out, on a broker and a registry of their own (never the
// shared registry, which every test file uses): the router runs and is warm, a compatible new version of
// the raw envelope's schema is registered, then the registry is out for longer than the transaction
// timeout while deliveries in that version reach webhooks.raw — its process killed (connections
// refused) and started again, or frozen (SIGSTOP: connections open, no answer) and woken. Every id ends
// up exactly once downstream, none in the dead letters, and the router runs on without a restart by hand.
import type { ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { dedupeRouterAppId } from '../../processors/dedupe-router/main.js';
import { type OutRecord, writeRecords } from '../../runtime/kafka/write-records.js';
import type { RawEnvelope } from '../../schemas/raw-envelope.js';
import { RAW_ENVELOPE_SCHEMA } from '../../schemas/raw-envelope.js';
import { loadSchema } from '../../schemas/schema-files.js';
import { valueSubject } from '../../schemas/topics.js';
import { type DedicatedStack, startDedicatedStack } from '../helpers/stack.js';
import {
  expectExactlyOnce,
  ProcessorsHarness,
  randomPrefix,
  waitReady,
  within,
} from './processors-harness.js';
import { generateLoad } from './processors-load.js';

/** Short, so that an outage of seconds outlasts it (the router's open transaction times out meanwhile). */
const TRANSACTION_TIMEOUT_MS = 5_000;
/** From the kill or freeze to the restart or wake-up: several transaction timeouts. */
const OUTAGE_MS = 25_000;
/** The new version's deliveries are written over the outage's first part, as live traffic arrives. */
const FEED_MS = 10_000;
const STEP_TIMEOUT_MS = 90_000;
const TEST_TIMEOUT_MS = 240_000;

/** The raw envelope's schema with one optional field more: BACKWARD_TRANSITIVE compatible. */
function rawEnvelopeWithTraceId(): string {
  const schema = JSON.parse(loadSchema(RAW_ENVELOPE_SCHEMA)) as { fields: unknown[] };
  schema.fields.push({
    name: 'traceId',
    type: ['null', 'string'],
    default: null,
    doc: 'Added by a later version: the platform trace the delivery belongs to.',
  });
  return JSON.stringify(schema);
}

/** The envelopes encoded with `schemaId`, as ingest would write them once it uses that version. */
async function encodeAll(
  harness: ProcessorsHarness,
  schemaId: number,
  envelopes: readonly RawEnvelope[],
): Promise<OutRecord[]> {
  const records: OutRecord[] = [];
  for (const [i, envelope] of envelopes.entries()) {
    records.push({
      key: Buffer.from(envelope.webhookId, 'utf8'),
      value: await harness.serde.encode(schemaId, { ...envelope, traceId: `trace-${i}` }),
      timestamp: envelope.receivedAt,
    });
  }
  return records;
}

/** Writes the records in small batches spread over `spreadMs`. */
async function feed(harness: ProcessorsHarness, records: readonly OutRecord[], spreadMs: number) {
  const batch = 25;
  const pause = spreadMs / Math.ceil(records.length / batch);
  for (let next = 0; next < records.length; next += batch) {
    await writeRecords(harness.settings, harness.names.raw, records.slice(next, next + batch));
    await sleep(pause);
  }
}

/** The router's aborted-and-retried batches so far (`hookledger_stream_batch_retries_total`); -1 if unknown. */
async function batchRetries(url: string): Promise<number> {
  const text = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(2_000) }).then(
    (r) => r.text(),
    () => '',
  );
  const line = /^hookledger_stream_batch_retries_total\{[^}]*\} (\d+)/m.exec(text);
  return line ? Number(line[1]) : -1;
}

/**
 * Polls the router's /readyz and /metrics until `until`: whether it noticed that something it waits
 * for does not answer, either by saying it is not ready or by giving up on a batch and retrying it.
 */
async function noticedBefore(url: string, retriesBefore: number, until: number): Promise<boolean> {
  while (Date.now() < until) {
    const status = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2_000) }).then(
      (r) => r.status,
      () => 0,
    );
    if (status !== 200 || (await batchRetries(url)) > retriesBefore) return true;
    await sleep(250);
  }
  return false;
}

describe('the dedupe-router while the schema registry is out', () => {
  let stack: DedicatedStack | undefined;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    stack = await startDedicatedStack();
  }, 180_000);

  afterEach(async () => {
    for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
    // A test that failed half-way may leave the registry frozen or down: the next one needs it.
    if (stack) {
      try {
        stack.thawRegistry();
      } catch {}
      await stack.startRegistry();
    }
  });

  afterAll(async () => {
    await stack?.dispose();
  });

  async function outage(how: 'killed' | 'frozen'): Promise<void> {
    const dedicated = stack!;
    const harness = new ProcessorsHarness(
      { brokers: dedicated.brokers, registryUrl: dedicated.registryUrl },
      randomPrefix(`registry-${how}`),
      3,
    );
    await harness.setUp();
    const groupId = dedupeRouterAppId(harness.prefix);
    const warm = generateLoad({ ids: 120, retries: 60 });
    const late = generateLoad({ ids: 300, retries: 150 });

    // Running and warm: every output's schema fetched, every partition restored and routed.
    await harness.produceRaw(warm.envelopes);
    const router = await harness.spawnProcess(['--only', 'dedupe-router'], {
      PROCESSOR_TRANSACTION_TIMEOUT_MS: String(TRANSACTION_TIMEOUT_MS),
    });
    children.push(router.child);
    await harness.waitCaughtUp(groupId, [harness.names.raw], STEP_TIMEOUT_MS);
    await waitReady(`${router.url}/readyz`, STEP_TIMEOUT_MS);

    // A compatible new version of the raw envelope's schema: the router has never seen its id.
    const newVersion = await harness.serde.register(
      valueSubject(harness.names.raw),
      rawEnvelopeWithTraceId(),
    );
    const records = await encodeAll(harness, newVersion, late.envelopes);

    const retriesBefore = await batchRetries(router.url);
    const outageStart = Date.now();
    if (how === 'killed') await dedicated.killRegistry();
    else dedicated.freezeRegistry();
    // While it is out, deliveries in the new version arrive: the first one sends the router to the registry.
    const fed = feed(harness, records, FEED_MS);
    // A registry that never answers must not leave the router stuck on it without a sign for good.
    const noticed =
      how === 'frozen' ? noticedBefore(router.url, retriesBefore, outageStart + OUTAGE_MS) : undefined;
    await fed;
    const noticedWhileOut = await noticed;
    await sleep(outageStart + OUTAGE_MS - Date.now());
    expect(router.child.exitCode, 'the router exited while the registry was out').toBeNull();
    if (how === 'killed') await dedicated.startRegistry();
    else dedicated.thawRegistry();

    await harness.waitCaughtUp(groupId, [harness.names.raw], STEP_TIMEOUT_MS);
    await waitReady(`${router.url}/readyz`, STEP_TIMEOUT_MS);
    // Still the same process: nobody restarted it.
    expect(router.child.exitCode).toBeNull();
    expect(router.child.signalCode).toBeNull();
    const deadLettered = (await harness.read<{ webhookId: string }>(harness.names.dlq)).map(
      (r) => r.value?.webhookId,
    );
    expect(deadLettered).toEqual([]);
    await expectExactlyOnce(harness, [...warm.ids, ...late.ids]);
    if (noticedWhileOut !== undefined)
      expect(
        noticedWhileOut,
        'all through the freeze, /readyz answered 200 and no batch was given up and retried',
      ).toBe(true);

    router.child.kill('SIGTERM');
    expect(await within(router.exited, STEP_TIMEOUT_MS, 'exit after SIGTERM')).toBe(0);
  }

  it(
    'killed (connections refused) for longer than the transaction timeout, then started again: every delivery in a new schema version routed once',
    () => outage('killed'),
    TEST_TIMEOUT_MS,
  );

  it(
    'frozen (connections open, no answer) for longer than the transaction timeout, then woken: the router does not wait on it silently, and routes every delivery once',
    () => outage('frozen'),
    TEST_TIMEOUT_MS,
  );
});
