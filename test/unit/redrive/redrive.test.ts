import { describe, expect, it } from 'vitest';
import type { DeadLetter } from '../../../processors/dedupe-router/dead-letter.js';
import { KafkaError } from '../../../runtime/kafka/rdkafka.js';
import {
  appendChunk,
  envelopeOf,
  newRunId,
  RedriveIncompleteError,
  type RedriveResult,
  redriveSummary,
} from '../../../tools/redrive/redrive.js';
import { matches } from '../../../tools/redrive/select.js';

const letter: DeadLetter = {
  reason: 'record-invalid',
  message: 'm',
  stage: 'dedupe-router.route',
  webhookId: 'w1',
  source: 's',
  trigger: 'UserAdded',
  webhookDate: '2026-11-22T09:00:00Z',
  receivedAt: 1,
  body: Buffer.from('{}'),
  headers: { 'content-type': 'application/json' },
  query: null,
  verifiedKeyId: 'k',
  ingestId: 'i',
};

describe('redrive', () => {
  it('chooses dead letters by reason and by time (from inclusive, to exclusive)', () => {
    expect(matches({}, 'x', 5)).toBe(true);
    expect(matches({ reasons: ['a', 'b'] }, 'b', 5)).toBe(true);
    expect(matches({ reasons: ['a'] }, 'b', 5)).toBe(false);
    expect(matches({ fromTime: 5, toTime: 6 }, 'x', 5)).toBe(true);
    expect(matches({ fromTime: 5, toTime: 6 }, 'x', 6)).toBe(false);
    expect(matches({ fromTime: 5 }, 'x', 4)).toBe(false);
  });

  it('sends the envelope the dead letter was made from, without reason, message and stage', () => {
    const { reason: _r, message: _m, stage: _s, ...envelope } = letter;
    expect(envelopeOf(letter)).toEqual(envelope);
  });

  it('names every run differently', () => {
    const now = new Date('2026-11-22T16:05:01Z');
    expect(newRunId(now)).toMatch(/^redrive-20261122-160501-[0-9a-f]{4}$/);
    expect(new Set(Array.from({ length: 20 }, () => newRunId(now))).size).toBeGreaterThan(1);
  });

  const result: RedriveResult = {
    runId: 'r',
    dryRun: false,
    read: 5,
    selected: new Map([['record-invalid', 3]]),
    sent: 2,
    skippedByFilter: 2,
    skippedUndecodable: 0,
    skippedFetchAnswers: 0,
    skippedExpired: 0,
    repeats: 1,
    dedupeWindowMs: 7 * 86_400_000,
    includeExpired: false,
    interrupted: false,
  };

  it('summarises what was selected, sent and skipped', () => {
    const text = redriveSummary(result);
    expect(text).toContain('selected      3 (record-invalid 3)');
    expect(text).toMatch(/sent\s+2 to webhooks.raw/);
    expect(text).toContain('skipped by filter 2');
    expect(text).toContain('repeats       1');
    expect(text).not.toContain('expired');
    expect(text).not.toContain('interrupted');
  });

  it('says a run stopped by Ctrl-C ended before the end, and that running it again is safe', () => {
    const text = redriveSummary({ ...result, interrupted: true });
    expect(text).toContain('interrupted   before the end of webhooks.dlq');
    expect(text).toContain('again is safe');
  });

  it('says how many were skipped as expired, against which window, and the flag that sends them', () => {
    const text = redriveSummary({ ...result, sent: 1, skippedExpired: 1, repeats: 0 });
    expect(text).toContain('skipped       1 expired: recorded over DEDUPE_WINDOW − 1h (7d − 1h) ago');
    expect(text).toContain('--include-expired');
    expect(redriveSummary({ ...result, includeExpired: true })).toContain(
      'expired       included (--include-expired)',
    );
  });

  it('counts the records of a chunk acknowledged before one failed, so the stop says they were appended', async () => {
    const refused = new KafkaError(new Error('Broker: Not enough in-sync replicas'), 'delivery');
    const writer = { writeEach: async () => [undefined, refused, undefined] };
    const record = { key: 'w1', value: Buffer.from('v') };
    const { acknowledged, failure } = await appendChunk(writer, [record, record, record]);
    expect(acknowledged).toBe(2);
    expect(failure).toBe(refused);
    expect(new RedriveIncompleteError('r', acknowledged, failure).message).toBe(
      'redrive r stopped after appending 2 record(s) to webhooks.raw',
    );
  });
});
