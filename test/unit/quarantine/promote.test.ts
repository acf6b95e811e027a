import { describe, expect, it } from 'vitest';
import type { QuarantinedRequest } from '../../../schemas/quarantined-request.js';
import { decodeMark, encodeMark, promotionKey } from '../../../tools/quarantine/held.js';
import { formatListing } from '../../../tools/quarantine/list.js';
import {
  PROMOTE_HEADER,
  type PromoteResult,
  promotedEnvelope,
  promoteSummary,
} from '../../../tools/quarantine/promote.js';

const DEFAULT_MEMORY = { dedupeWindowMs: 604_800_000, maxAgeMs: 262_800_000, maxAheadMs: 300_000 };

const held: QuarantinedRequest = {
  webhookId: 'wh-1',
  source: 'energy',
  trigger: 'UserAdded',
  webhookDate: '2026-11-23T10:00:00Z',
  receivedAt: 1_700_000_000_000,
  body: Buffer.from('{"webhook":{"id":"wh-1"}}'),
  headers: { 'content-type': 'application/json', 'x-signature': 'sha1=00' },
  query: 'tenant=7',
  reason: 'mismatch',
  triedKeyIds: ['k2026a'],
  ingestId: 'req-1',
};

describe('a promoted request', () => {
  it('becomes the raw envelope ingest would have written, with the key that verifies it now', () => {
    expect(promotedEnvelope(held, 'k2026b')).toEqual({
      webhookId: 'wh-1',
      source: 'energy',
      trigger: 'UserAdded',
      webhookDate: '2026-11-23T10:00:00Z',
      receivedAt: 1_700_000_000_000,
      body: held.body,
      // The signature promote verified stays in the quarantine: raw never carries one.
      headers: { 'content-type': 'application/json' },
      query: 'tenant=7',
      verifiedKeyId: 'k2026b',
      ingestId: 'req-1',
    });
  });

  it('is marked once per source and webhook id; a mark survives its encoding', () => {
    expect(promotionKey('energy', 'wh-1')).toBe('energy/wh-1');
    const mark = { run: 'promote-1', ingestId: 'req-1', keyId: 'k2026b', promotedAt: 5 };
    expect(decodeMark(encodeMark(mark))).toEqual(mark);
    expect(decodeMark(Buffer.from('not json'))).toBeUndefined();
    expect(decodeMark(null)).toBeUndefined();
  });
});

describe('what the commands print', () => {
  const result: PromoteResult = {
    runId: 'promote-20261123-130000-ab12',
    source: 'energy',
    dryRun: false,
    read: 7,
    promoted: new Map([['k2026b', 3]]),
    alreadyPromoted: 1,
    repeats: 1,
    expired: 0,
    memory: DEFAULT_MEMORY,
    includeExpired: false,
    refused: new Map([['mismatch', 2]]),
  };

  it('promote: what was promoted by key, what was already, what is still refused', () => {
    const text = promoteSummary(result);
    expect(text).toContain('promote promote-20261123-130000-ab12 of source energy');
    expect(text).toMatch(/promoted\s+3 to webhooks\.raw \(k2026b 3\) with hookledger-promote: promote-/);
    expect(text).toMatch(/already promoted 1/);
    expect(text).toMatch(/still refused\s+2 \(mismatch 2\)/);
    expect(text).not.toContain('expired');
    expect(PROMOTE_HEADER).toBe('hookledger-promote');
  });

  it('promote: the requests held back as expired, the limit and what it is made of, and the flag', () => {
    const text = promoteSummary({ ...result, expired: 2 });
    expect(text).toContain(
      '  expired          2 received over 93.9 h ago = DEDUPE_WINDOW − WEBHOOK_MAX_AGE − WEBHOOK_MAX_AHEAD − 1h (7d − 73h − 5m − 1h):',
    );
    expect(text).toContain('promoting one would route it twice');
    expect(text).toContain(
      'Add\n                   --include-expired only if no other attempt of those ids was accepted.',
    );
    expect(text).not.toContain('included (--include-expired)');
  });

  it('promote: a window that leaves no time says so; an included run says it included them', () => {
    const tight = { ...DEFAULT_MEMORY, dedupeWindowMs: DEFAULT_MEMORY.maxAgeMs + DEFAULT_MEMORY.maxAheadMs };
    const text = promoteSummary({ ...result, expired: 3, memory: tight });
    expect(text).toContain('expired          3: DEDUPE_WINDOW − WEBHOOK_MAX_AGE − WEBHOOK_MAX_AHEAD − 1h');
    expect(text).toContain('(4385m − 73h − 5m − 1h) leaves no time to promote in:');
    const included = promoteSummary({ ...result, includeExpired: true });
    expect(included).toContain('  expired          included (--include-expired)');
  });

  it('list: one line per request with its status, never a body or a key', () => {
    const text = formatListing([
      { ...held, promotedBy: undefined },
      { ...held, webhookId: 'wh-2', reason: 'missing', triedKeyIds: [], promotedBy: 'promote-1' },
    ]);
    const lines = text.split('\n');
    expect(lines[0]).toMatch(/^received\s+source\s+webhook id\s+reason\s+keys tried\s+status$/);
    expect(lines[1]).toMatch(/^2023-11-14T22:13:20.000Z\s+energy\s+wh-1\s+mismatch\s+k2026a\s+held$/);
    expect(lines[2]).toMatch(/wh-2\s+missing\s+-\s+promoted promote-1$/);
    expect(lines[3]).toBe('2 quarantined request(s): 1 held, 1 promoted');
    expect(text).not.toContain('webhook":');
    expect(formatListing([])).toBe('0 quarantined request(s): 0 held, 0 promoted');
  });
});
