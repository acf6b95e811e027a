// The enrich stage as a real child process, SIGKILLed while its fetches are in flight, then restarted
// as the same instance: every Minimal delivery still gets exactly one fetched event (faults lane).
import type { ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { EnergySwitchEvent } from '../../processors/dedupe-router/entity-event.js';
import { dedupeRouterAppId } from '../../processors/dedupe-router/main.js';
import { enrichAppId } from '../../processors/enrich/main.js';
import type { RunningStage } from '../../runtime/streams/stage.js';
import { testStack } from '../helpers/stack.js';
import { envelopeFor } from '../unit/processors/fixtures.js';
import { ProcessorsHarness, randomPrefix } from './processors-harness.js';

const MINIMAL_QUERY =
  'query EnergySwitch($id: ID!) { getEnergySwitch(id: $id) { __typename ... on EnergySwitch { id date } } }';
const SWITCHES = 400;

describe('the enrich stage under faults', () => {
  const children: ChildProcess[] = [];
  const stages: RunningStage[] = [];
  let server: Server | undefined;
  afterEach(async () => {
    for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
    for (const stage of stages.splice(0)) await stage.close();
    await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  });

  it('killed with SIGKILL mid-batch, then restarted, neither loses nor duplicates a fetched event', async () => {
    // An endpoint that takes 20 ms an answer: the kill lands with fetches in flight and a batch open.
    let requests = 0;
    server = createServer((req, res) => {
      let text = '';
      req.on('data', (d) => (text += d));
      req.on('end', () => {
        requests++;
        const id = JSON.parse(text).variables.id as string;
        const record = {
          __typename: 'EnergySwitch',
          id,
          date: '2026-11-20T10:15:00Z',
          postcode: 'SW1A 1AA',
          fuelsSwitched: 2,
        };
        setTimeout(() => res.writeHead(200).end(JSON.stringify({ data: { getEnergySwitch: record } })), 20);
      });
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const api = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

    const harness = new ProcessorsHarness(testStack(), randomPrefix('enrich-kill'), 3);
    await harness.setUp();
    stages.push(await harness.startRouter());
    await harness.produceRaw(
      Array.from({ length: SWITCHES }, (_, i) =>
        envelopeFor(
          {
            webhook: {
              id: `wh_k${i}`,
              trigger: 'EnergySwitchUpdated',
              date: new Date(Date.now() - 60_000).toISOString(),
            },
            query: { api: `${api}/graphql`, query: MINIMAL_QUERY, variables: { id: `es_${i}` } },
            data: {
              getEnergySwitch: { __typename: 'EnergySwitch', id: `es_${i}`, date: '2026-11-20T10:59:00Z' },
            },
          },
          { receivedAt: Date.now(), ingestId: `ingest-k${i}` },
        ),
      ),
    );
    await harness.waitCaughtUp(dedupeRouterAppId(harness.prefix), [harness.names.raw], 60_000);

    // Its query selects more than the deliveries carried: every one of them is fetched.
    const env = {
      ENRICH: 'true',
      ENRICH_ALLOWED_ENDPOINTS: api,
      ENRICH_QUERY:
        'query ($id: ID!) { getEnergySwitch(id: $id) { __typename ... on EnergySwitch { id date postcode fuelsSwitched } } }',
      ENRICH_CONCURRENCY: '4',
      HOOKLEDGER_INSTANCE_ID: 'it-enrich-kill',
      PROCESSOR_SESSION_TIMEOUT_MS: '6000',
    };
    const first = await harness.spawnProcess(['--only', 'enrich'], env);
    children.push(first.child);
    const deadline = Date.now() + 60_000;
    while (requests < SWITCHES / 4 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(requests).toBeGreaterThanOrEqual(SWITCHES / 4);
    first.child.kill('SIGKILL');
    await first.exited;
    const killedAt = requests;

    const second = await harness.spawnProcess(['--only', 'enrich'], env);
    children.push(second.child);
    const source = harness.names.entity('energy-switch');
    for (let i = 0; i < 2; i++) await harness.waitCaughtUp(enrichAppId(harness.prefix), [source], 90_000);

    const fetched = (await harness.read<EnergySwitchEvent>(source)).filter(
      (r) => r.value?.origin === 'fetched',
    );
    const keys = fetched.map((r) => r.key);
    expect(new Set(keys).size).toBe(keys.length);
    expect(new Set(keys)).toEqual(new Set(Array.from({ length: SWITCHES }, (_, i) => `test/es_${i}`)));
    expect(fetched.every((r) => r.value?.postcode === 'SW1A 1AA')).toBe(true);
    // Some fetches of the aborted transaction were made again: the endpoint may see a request twice.
    expect(requests).toBeGreaterThanOrEqual(SWITCHES);
    expect(killedAt).toBeLessThan(SWITCHES);
  }, 240_000);
});
