import { describe, expect, it } from 'vitest';
import { parseInstant } from '../../../../processors/dedupe-router/instant.js';

describe('parseInstant', () => {
  it.each([
    ['2026-11-20T10:15:30.123Z', '2026-11-20T10:15:30.123Z'],
    ['2026-11-20T10:15:00Z', '2026-11-20T10:15:00.000Z'],
    ['2026-11-20T10:15Z', '2026-11-20T10:15:00.000Z'],
    ['2026-11-20T11:15:00+01:00', '2026-11-20T10:15:00.000Z'],
    ['2026-11-20T05:15:00-0500', '2026-11-20T10:15:00.000Z'],
    ['2026-11-20t10:15:00z', '2026-11-20T10:15:00.000Z'],
    ['2026-11-20T10:15:30.123456789Z', '2026-11-20T10:15:30.123Z'],
    ['2024-02-29T00:00:00Z', '2024-02-29T00:00:00.000Z'],
    ['2016-12-31T23:59:60Z', '2016-12-31T23:59:59.999Z'],
  ])('%s is %s', (text, iso) => {
    expect(parseInstant(text)).toBe(Date.parse(iso));
  });

  it.each([
    ['a local time, which would depend on the machine', '2026-11-20T10:15:00'],
    ['a date alone', '2026-11-20'],
    ['a 30 February', '2026-02-30T00:00:00Z'],
    ['a 29 February outside a leap year', '2026-02-29T00:00:00Z'],
    ['month 13', '2026-13-01T00:00:00Z'],
    ['hour 24', '2026-11-20T24:00:00Z'],
    ['an English date Date.parse would accept', 'Nov 20 2026 10:15:00 GMT'],
    ['trailing text', '2026-11-20T10:15:00Z junk'],
    ['empty text', ''],
  ])('%s does not parse', (_, text) => {
    expect(parseInstant(text)).toBeUndefined();
  });

  it('keeps years below 100 as they are', () => {
    expect(new Date(parseInstant('0050-01-01T00:00:00Z')!).getUTCFullYear()).toBe(50);
  });
});
