import { afterEach, describe, expect, it } from 'vitest';
import { UsageError } from '../../../tools/cli/command.js';
import { createDeliveryGenerator } from '../../../tools/simulate/deliveries.js';
import { type GraphqlApi, serveGraphqlApi } from '../../../tools/simulate/graphql-api.js';
import { parseSimulateArgs } from '../../../tools/simulate/options.js';

const ask = (api: GraphqlApi, id: string, timeoutMs = 5_000) =>
  fetch(api.url, {
    method: 'POST',
    signal: AbortSignal.timeout(timeoutMs),
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      query: 'query ($id: ID!) { getEnergySwitch(id: $id) { id } }',
      variables: { id },
    }),
  });

describe("the simulator's GraphQL API", () => {
  let api: GraphqlApi | undefined;
  afterEach(async () => {
    await api?.close();
    api = undefined;
  });

  it('answers the full record of every switch the generator sent, money as written, and OperationFailure for others', async () => {
    api = await serveGraphqlApi({ port: 0, failureRate: 0, seed: 's' });
    const generator = createDeliveryGenerator({
      seed: 's',
      start: 0,
      minimalRate: 1,
      api: api.url,
      onSwitch: api.record,
    });
    const minimal = Array.from({ length: 200 }, () => generator.next()).filter(
      (d) => d.entity === 'EnergySwitch',
    );
    expect(minimal.length).toBeGreaterThan(10);
    expect(minimal.every((d) => d.variant === 'minimal')).toBe(true);
    expect(JSON.parse(minimal[0]!.body).query.api).toBe(api.url);
    // §9: the query address in a webhook body has a `v1` segment before `graphql`, as the platform's.
    expect(new URL(api.url).pathname).toBe('/v1/graphql');
    const answer = await (await ask(api, minimal.at(-1)!.entityId)).text();
    const record = JSON.parse(answer).data.getEnergySwitch;
    expect(record).toMatchObject({ __typename: 'EnergySwitch', id: minimal.at(-1)!.entityId });
    expect(Object.keys(record)).toContain('postcode');
    expect(answer).toMatch(/"amount":\d+\.\d{2}[,}]/);
    // Each thin delivery waits for an answer about its switch; an answer settles one (one was asked above).
    expect(api.unfetched()).toBe(minimal.length - 1);
    await ask(api, minimal[0]!.entityId);
    expect(api.unfetched()).toBe(minimal.length - 2);
    const unknown = await (await ask(api, 'es_0')).json();
    expect(unknown).toEqual({
      data: { getEnergySwitch: { __typename: 'OperationFailure', description: 'Energy switch not found' } },
    });
  });

  it('answers 429 with Retry-After and 500 at the failure rate', async () => {
    api = await serveGraphqlApi({ port: 0, failureRate: 1, seed: 'weather' });
    const statuses: number[] = [];
    // A third of failures are never answered: a short client timeout stands for them.
    for (let i = 0; i < 12; i++) {
      const response = await ask(api, 'es_1', 200).catch(() => undefined);
      if (response) statuses.push(response.status);
      else statuses.push(0);
      if (response?.status === 429) expect(response.headers.get('retry-after')).toBe('1');
    }
    expect(new Set(statuses)).toEqual(new Set([429, 500, 0]));
  });

  it('is asked for by --minimal-rate, with its port, failure rate and linger', () => {
    const parsed = parseSimulateArgs(
      ['--source', 'local', '--key', 'k', '--minimal-rate', '0.5', '--api-failure-rate', '0.1'],
      {},
    );
    expect(parsed.api).toEqual({ port: 8089, failureRate: 0.1, lingerMs: 10_000 });
    expect(parsed.simulation.generator).toMatchObject({ minimalRate: 0.5 });
    expect(parseSimulateArgs(['--source', 'local', '--key', 'k'], {}).api).toBeUndefined();
    expect(() => parseSimulateArgs(['--source', 'l', '--key', 'k', '--minimal-rate', '2'], {})).toThrow(
      UsageError,
    );
    expect(() =>
      parseSimulateArgs(['--source', 'l', '--key', 'k', '--minimal-rate', '1', '--api-port', 'x'], {}),
    ).toThrow(/--api-port: expected a port number/);
  });
});
