// The enrich stage on the real broker and registry, against a GraphQL endpoint served by the test:
// Minimal deliveries become full `.latest` rows, once each, through a 429 storm and an outage.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DeadLetter } from '../../processors/dedupe-router/dead-letter.js';
import type { EnergySwitchEvent } from '../../processors/dedupe-router/entity-event.js';
import type { WebhookFailure } from '../../processors/dedupe-router/failure.js';
import { dedupeRouterAppId, startDedupeRouter } from '../../processors/dedupe-router/main.js';
import { enrichAppId, startEnrich } from '../../processors/enrich/main.js';
import { startTables, tablesAppId } from '../../processors/tables/main.js';
import { FULL_ENERGY_SWITCH_QUERY } from '../../runtime/config.js';
import type { RunningStage } from '../../runtime/streams/stage.js';
import { runRedriveCommand } from '../../tools/cli/commands/redrive.js';
import { testStack } from '../helpers/stack.js';
import { envelopeFor } from '../unit/processors/fixtures.js';
import { ProcessorsHarness, quietLogger, randomPrefix, runInProcess } from './processors-harness.js';

const MINIMAL_QUERY =
  'query EnergySwitch($id: ID!) { getEnergySwitch(id: $id) { __typename ... on OperationFailure { description(locale: en_GB) } ... on EnergySwitch { id date } } }';
const RATE_LIMIT = 20;

/** The full record the endpoint knows for a switch. */
function fullRecord(id: string, postcode: string) {
  return {
    __typename: 'EnergySwitch',
    id,
    date: '2026-11-20T10:15:00Z',
    user: { id: 'usr_1', tenantId: null },
    userSwitchReferenceId: `REF-${id}`,
    postcode,
    provider: { code: 'ACME', name: 'Acme Energy Ltd' },
    tariffName: 'Acme Flex 12M',
    projectedSpend: { currency: 'GBP', amount: 1234.56 },
    savings: { currency: 'GBP', amount: 199.9 },
    fuelType: 'dualFuel',
    fuelsSwitched: 2,
    commission: {
      fuelsWaitingForUpdate: 0,
      fuelsWithSwitchTerminated: 0,
      fuelsWithCommissionExpected: 2,
      fuelsWithCommissionReceived: 0,
      statusDate: '2026-11-19T09:00:00Z',
      status: 'commissionExpected',
    },
  };
}

/** A GraphQL endpoint with switches to be told how to misbehave. */
class Endpoint {
  readonly requests: { at: number; id: string; status: number; auth: string | undefined }[] = [];
  /** Answer the next this-many requests with 429 Retry-After: 1. */
  throttleNext = 0;
  down = false;
  #server: Server | undefined;

  async start(): Promise<string> {
    this.#server = createServer((req, res) => void this.#answer(req, res));
    await new Promise<void>((resolve) => this.#server!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  async #answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let text = '';
    for await (const chunk of req) text += chunk;
    const id = String(JSON.parse(text).variables?.id);
    const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      this.requests.push({ at: Date.now(), id, status, auth: req.headers.authorization });
      res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
    };
    if (this.down) return send(503, {});
    if (this.throttleNext > 0) {
      this.throttleNext--;
      return send(429, {}, { 'retry-after': '1' });
    }
    if (id.startsWith('es_gone'))
      return send(200, {
        data: { getEnergySwitch: { __typename: 'OperationFailure', description: 'Energy switch not found' } },
      });
    if (id.startsWith('es_err'))
      return send(200, { data: null, errors: [{ message: 'internal resolver error' }] });
    return send(200, { data: { getEnergySwitch: fullRecord(id, 'SW1A 1AA') } });
  }

  async stop(): Promise<void> {
    await new Promise((resolve) => this.#server?.close(resolve));
  }
}

describe('the enrich stage', () => {
  const harness = new ProcessorsHarness(testStack(), randomPrefix('enrich'), 3);
  const endpoint = new Endpoint();
  const elsewhere = new Endpoint();
  const stages: RunningStage[] = [];
  let api = '';
  let counter = 0;
  const start = Date.now();

  /** A delivery of `id` with the given query, dated `ageMs` ago. */
  function delivery(
    id: string,
    { full = false, dated = Date.now() - 60_000, at = api, postcode = 'OLD 0AA' } = {},
  ) {
    const webhookId = `wh_${++counter}_${id}`;
    const date = new Date(dated).toISOString();
    return envelopeFor(
      {
        webhook: { id: webhookId, trigger: 'EnergySwitchUpdated', date },
        query: {
          api: `${at}/graphql`,
          query: full ? FULL_ENERGY_SWITCH_QUERY : MINIMAL_QUERY,
          variables: { id },
        },
        data: {
          getEnergySwitch: full
            ? fullRecord(id, postcode)
            : { __typename: 'EnergySwitch', id, date: '2026-11-20T10:59:00Z' },
        },
      },
      { receivedAt: Date.now(), ingestId: `ingest-${webhookId}` },
    );
  }

  async function caughtUp(): Promise<void> {
    await harness.waitCaughtUp(dedupeRouterAppId(harness.prefix), [harness.names.raw], 60_000);
    // Twice: the stage's own fetched events land on its input and must be read past too.
    for (let i = 0; i < 2; i++)
      await harness.waitCaughtUp(
        enrichAppId(harness.prefix),
        [harness.names.entity('energy-switch')],
        60_000,
      );
  }

  const fetched = async () =>
    (await harness.read<EnergySwitchEvent>(harness.names.entity('energy-switch'))).filter(
      (r) => r.value?.origin === 'fetched',
    );

  beforeAll(async () => {
    api = await endpoint.start();
    const other = await elsewhere.start();
    await harness.setUp();
    const config = harness.config({
      ENRICH: 'true',
      ENRICH_ALLOWED_ENDPOINTS: api,
      ENRICH_CREDENTIALS: 's3cret',
      ENRICH_RATE_LIMIT: String(RATE_LIMIT),
      ENRICH_TIMEOUT: '500ms',
      ENRICH_RETRY_BUDGET: '2s',
      ENRICH_BACKOFF: '50ms',
      ENRICH_BREAKER_FAILURES: '2',
      ENRICH_BREAKER_COOLDOWN: '200ms',
    });
    const registry = new Registry();
    const logger = quietLogger();
    stages.push(await startDedupeRouter({ config, logger, registry }));
    stages.push(await startTables({ config, logger, registry }));
    stages.push(await startEnrich({ config, logger, registry }));
    // 12 Minimal deliveries arriving into a 429 storm, one full one, one off the allow-list, an
    // OperationFailure and GraphQL errors.
    endpoint.throttleNext = 8;
    await harness.produceRaw([
      ...Array.from({ length: 12 }, (_, i) => delivery(`es_${i}`)),
      delivery('es_full', { full: true }),
      delivery('es_foreign', { at: other }),
      delivery('es_gone'),
      delivery('es_err'),
    ]);
    await caughtUp();
  });

  afterAll(async () => {
    for (const stage of [...stages].reverse()) await stage.close();
    await endpoint.stop();
    await elsewhere.stop();
  });

  it('gives each Minimal delivery exactly one fetched event, through a 429 storm kept within the rate limit', async () => {
    const events = await fetched();
    const keys = events.map((e) => e.key).sort();
    expect(keys).toEqual(Array.from({ length: 12 }, (_, i) => `test/es_${i}`).sort());
    expect(endpoint.requests.filter((r) => r.status === 429)).toHaveLength(8);
    // Never more than the rate plus its one-second burst in any second.
    const answered = endpoint.requests.map((r) => r.at);
    for (const at of answered)
      expect(answered.filter((t) => t >= at && t < at + 1_000).length).toBeLessThanOrEqual(2 * RATE_LIMIT);
    expect(endpoint.requests.every((r) => r.auth === 'Bearer s3cret')).toBe(true);
    for (const { value } of events) {
      expect(value).toMatchObject({
        webhookId: expect.stringMatching(/#fetched$/),
        postcode: 'SW1A 1AA',
        queryApi: `${api}/graphql`,
      });
      expect(value!.occurredAt).toBeGreaterThanOrEqual(start);
    }
  });

  it('never asks for a complete delivery, nor at an origin off the allow-list', async () => {
    expect(endpoint.requests.some((r) => r.id === 'es_full')).toBe(false);
    expect(elsewhere.requests).toHaveLength(0);
    expect((await fetched()).some((e) => e.key === 'test/es_foreign' || e.key === 'test/es_full')).toBe(
      false,
    );
  });

  it('sends an OperationFailure answer to webhooks.failures and GraphQL errors to webhooks.dlq', async () => {
    const failures = await harness.read<WebhookFailure>(harness.names.failures);
    expect(failures.map((f) => [f.key, f.value?.description])).toEqual([
      ['test/es_gone', 'Energy switch not found'],
    ]);
    const dead = await harness.read<DeadLetter>(harness.names.dlq);
    expect(dead.map((d) => [d.value?.reason, d.value?.stage, d.value?.webhookId])).toEqual([
      ['graphql-errors', 'enrich.fetch', expect.stringMatching(/_es_err#fetched$/)],
    ]);
    // A redrive sends deliveries again, never an answer of the API: before, this one went into
    // webhooks.raw (unsigned, never delivered) and was routed as a first delivery of `<id>#fetched`.
    const { code, text } = await runInProcess(runRedriveCommand, ['--json'], harness.environment());
    expect(code).toBe(0);
    expect(JSON.parse(text)).toMatchObject({ read: 1, sent: 0, skippedFetchAnswers: 1 });
  });

  it('leaves the full fields in the .latest row, and an older delivery cannot roll them back', async () => {
    // A Full delivery dated after the Minimal one but before the fetch, arriving after both: the
    // fetched record is newer (event time = fetch time), so its postcode stays.
    const events = await harness.read<EnergySwitchEvent>(harness.names.entity('energy-switch'));
    const of = (origin: string) =>
      events.find((e) => e.key === 'test/es_3' && e.value?.origin === origin)!.value!;
    const between = of('delivery').occurredAt + 1_000;
    expect(between).toBeLessThan(of('fetched').occurredAt);
    await harness.produceRaw([delivery('es_3', { full: true, dated: between, postcode: 'OLD 0AA' })]);
    await caughtUp();
    await harness.waitCaughtUp(tablesAppId(harness.prefix), [harness.names.entity('energy-switch')], 60_000);
    const rows = await harness.read<{ fields: Record<string, string | null> }>(
      harness.names.latest('energy-switch'),
    );
    const last = (key: string) => rows.filter((r) => r.key === key).at(-1)?.value?.fields;
    expect(last('test/es_3')).toMatchObject({
      postcode: 'SW1A 1AA',
      'savings.amount': '199.9',
      tariffName: 'Acme Flex 12M',
    });
    expect(last('test/es_7')).toMatchObject({ postcode: 'SW1A 1AA', 'provider.name': 'Acme Energy Ltd' });
  });

  it('waits out an endpoint down past its retry budget, then fetches, without a dead letter', async () => {
    endpoint.down = true;
    const before = endpoint.requests.length;
    await harness.produceRaw([delivery('es_late_1'), delivery('es_late_2')]);
    await harness.waitCaughtUp(dedupeRouterAppId(harness.prefix), [harness.names.raw], 60_000);
    await new Promise((r) => setTimeout(r, 3_000));
    const during = await fetched();
    expect(during.some((e) => e.key.startsWith('test/es_late'))).toBe(false);
    // The breaker keeps it to a few probes, not a request per record per retry.
    expect(endpoint.requests.length - before).toBeLessThan(25);
    endpoint.down = false;
    await caughtUp();
    const after = await fetched();
    expect(
      after
        .filter((e) => e.key.startsWith('test/es_late'))
        .map((e) => e.key)
        .sort(),
    ).toEqual(['test/es_late_1', 'test/es_late_2']);
    expect((await harness.read<DeadLetter>(harness.names.dlq)).map((d) => d.value?.reason)).toEqual([
      'graphql-errors',
    ]);
  });
});
