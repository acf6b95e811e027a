import { describe, expect, it } from 'vitest';
import { misconfigurationHint, progressLine } from '../../../tools/simulate/report.js';
import { emptyStats, type SimulationStats } from '../../../tools/simulate/simulation.js';

const stats = (over: Partial<SimulationStats>): SimulationStats => ({
  ...emptyStats(0),
  webhooks: 3,
  deliveries: 9,
  retriedAfterFailure: 6,
  retrying: 3,
  ...over,
});

describe('the simulate progress line', () => {
  it('says what the last failed attempt got while deliveries are retried', () => {
    expect(progressLine(stats({ lastAttemptFailure: 'ECONNREFUSED' }), 3, 1000)).toBe(
      'webhooks 3/3, acknowledged 0, deliveries 9, retrying 3 (last: ECONNREFUSED), gave up 0 · 9.0/s',
    );
  });

  it('does not show an old failure once nothing is retried', () => {
    expect(progressLine(stats({ retrying: 0, lastAttemptFailure: 'HTTP 503' }), 3, 1000)).toContain(
      'retrying 0, gave up 0',
    );
  });
});

describe('a misconfiguration hint', () => {
  it('is given for a 401 and a 404, not for an outage', () => {
    expect(misconfigurationHint('HTTP 401', true)).toBe(
      "the endpoint answered 401: is --key the source's signing key?",
    );
    expect(misconfigurationHint('HTTP 404', true)).toBe(
      "the endpoint answered 404: is the URL's source right?",
    );
    expect(misconfigurationHint('HTTP 503', true)).toBeUndefined();
    expect(misconfigurationHint('ECONNREFUSED', true)).toBeUndefined();
  });
});
