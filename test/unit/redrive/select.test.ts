// Which dead letters a redrive run sends: a letter older than the dedupe window (less the margin) may name
// an id the router has forgotten, so it is skipped unless the operator includes it.
import { describe, expect, it } from 'vitest';
import { EXPIRY_MARGIN_MS, isExpired, Selection, type SelectionRule } from '../../../tools/redrive/select.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const WINDOW = 7 * DAY;
const NOW = Date.parse('2026-11-27T06:00:00Z');

const letter = (webhookId: string, reason = 'record-invalid') => ({ webhookId, source: 's', reason });

function selection(rule: Partial<SelectionRule> = {}, now = () => NOW): Selection {
  return new Selection({ filter: {}, dedupeWindowMs: WINDOW, includeExpired: false, now, ...rule });
}

describe('redrive selection', () => {
  it('counts a letter as expired once it is older than the window less the margin', () => {
    expect(EXPIRY_MARGIN_MS).toBe(HOUR);
    const edge = NOW - (WINDOW - HOUR);
    expect(isExpired(edge, NOW, WINDOW)).toBe(false);
    expect(isExpired(edge - 1, NOW, WINDOW)).toBe(true);
    expect(isExpired(NOW - 6 * DAY, NOW, WINDOW)).toBe(false);
    expect(isExpired(NOW - 8 * DAY, NOW, WINDOW)).toBe(true);
    // A longer window keeps older letters.
    expect(isExpired(NOW - 8 * DAY, NOW, 14 * DAY)).toBe(false);
  });

  it('skips an expired letter and counts it, and sends it with includeExpired', () => {
    const strict = selection();
    expect(strict.choose(letter('old'), NOW - 8 * DAY)).toBe('expired');
    expect(strict.choose(letter('new'), NOW - DAY)).toBe('send');
    expect(strict.counts).toMatchObject({ read: 2, skippedExpired: 1, repeats: 0 });
    // Selected by the filter, then skipped: the selected count keeps its meaning.
    expect(strict.counts.selected.get('record-invalid')).toBe(2);

    const included = selection({ includeExpired: true });
    expect(included.choose(letter('old'), NOW - 8 * DAY)).toBe('send');
    expect(included.counts.skippedExpired).toBe(0);
  });

  it('judges each letter by the clock when it is read, not by the start of the run', () => {
    let now = NOW;
    const run = selection({}, () => now);
    const time = NOW - (WINDOW - 2 * HOUR);
    expect(run.choose(letter('a'), time)).toBe('send');
    now += 2 * HOUR;
    expect(run.choose(letter('b'), time)).toBe('expired');
  });

  it('still sends a later letter of an id whose first letter expired, and each id once', () => {
    const run = selection();
    expect(run.choose(letter('x'), NOW - 8 * DAY)).toBe('expired');
    expect(run.choose(letter('x'), NOW - DAY)).toBe('send');
    expect(run.choose(letter('x'), NOW - DAY + 1)).toBe('repeat');
    expect(run.counts).toMatchObject({ read: 3, skippedExpired: 1, repeats: 1 });
  });

  it('applies the filter first, and counts an undecodable letter as such however old', () => {
    const run = selection({ filter: { reasons: ['record-invalid'] } });
    expect(run.choose(letter('f', 'too-old'), NOW - 8 * DAY)).toBe('filtered');
    const any = selection();
    expect(any.choose(letter('u', 'envelope-undecodable'), NOW - 8 * DAY)).toBe('undecodable');
    expect(run.counts).toMatchObject({ skippedByFilter: 1, skippedExpired: 0 });
    expect(any.counts).toMatchObject({ skippedUndecodable: 1, skippedExpired: 0 });
  });

  it('never sends the enrich stage’s dead letters: an API answer under <id>#fetched is no delivery', () => {
    const run = selection();
    const answer = { ...letter('x#fetched', 'record-invalid'), stage: 'enrich.fetch' };
    expect(run.choose(answer, NOW - DAY)).toBe('fetch-answer');
    // The delivery's own letter, same reason, is sent.
    expect(run.choose({ ...letter('x', 'record-invalid'), stage: 'dedupe-router.route' }, NOW - DAY)).toBe(
      'send',
    );
    expect(run.counts).toMatchObject({
      read: 2,
      skippedFetchAnswers: 1,
      selected: new Map([['record-invalid', 2]]),
    });
  });
});
