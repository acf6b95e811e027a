import { describe, expect, it } from 'vitest';
import {
  type DecisionInput,
  type FetchPolicy,
  fetchDecision,
} from '../../../../processors/enrich/fetch-decision.js';
import { readQueryShape } from '../../../../processors/enrich/selection.js';
import { FULL_ENERGY_SWITCH_QUERY } from '../../../../runtime/config.js';

const API = 'https://api.platform.example/v1/graphql';
const policy: FetchPolicy = {
  triggers: new Set(),
  fullPaths: readQueryShape(FULL_ENERGY_SWITCH_QUERY).paths,
  allowedOrigins: new Set(['https://api.platform.example']),
};
const minimal: DecisionInput = {
  trigger: 'EnergySwitchUpdated',
  deleted: false,
  fields: ['id', 'date'],
  queryApi: API,
  origin: 'delivery',
};

describe('fetchDecision', () => {
  it('fetches a Minimal delivery from its query.api when that origin is allowed', () => {
    const decision = fetchDecision(minimal, policy);
    expect(decision).toMatchObject({ fetch: API });
    expect('missing' in decision && decision.missing).toContain('postcode');
  });

  it('never fetches from an origin off the list, however the URL is dressed', () => {
    for (const queryApi of [
      'https://evil.example/v1/graphql',
      'https://api.platform.example.evil.example/graphql',
      'http://api.platform.example/v1/graphql',
      'https://api.platform.example:8443/graphql',
      'https://user:pw@api.platform.example/graphql',
      'file:///etc/passwd',
      'not a url',
    ])
      expect(fetchDecision({ ...minimal, queryApi }, policy)).toEqual({ skip: 'endpoint-not-allowed' });
    expect(fetchDecision({ ...minimal, queryApi: null }, policy)).toEqual({ skip: 'no-endpoint' });
  });

  it('leaves complete deliveries, deletions, its own answers and other triggers alone', () => {
    expect(fetchDecision({ ...minimal, fields: [...policy.fullPaths] }, policy)).toEqual({
      skip: 'complete',
    });
    expect(fetchDecision({ ...minimal, deleted: true }, policy)).toEqual({ skip: 'deletion' });
    expect(fetchDecision({ ...minimal, origin: 'fetched' }, policy)).toEqual({ skip: 'fetched' });
    const onlyAdded = { ...policy, triggers: new Set(['EnergySwitchAdded']) };
    expect(fetchDecision(minimal, onlyAdded)).toEqual({ skip: 'trigger' });
  });

  it('reads an event written before `origin` existed as a delivery', () => {
    const { origin: _, ...old } = minimal;
    expect(fetchDecision(old, policy)).toMatchObject({ fetch: API });
  });
});
