import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseInstant, parseInstantBytes } from '../../../../processors/dedupe-router/instant.js';

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

  // ISO 8601 writes a whole-hour offset as ±hh too; the contract asks for ISO 8601, not RFC 3339.
  it.each([
    ['2026-11-20T11:15:00+01', '2026-11-20T10:15:00.000Z'],
    ['2026-11-20T05:15:00.5-05', '2026-11-20T10:15:00.500Z'],
    ['2026-11-20T10:15+00', '2026-11-20T10:15:00.000Z'],
  ])('an offset in whole hours: %s is %s', (text, iso) => {
    expect(parseInstant(text)).toBe(Date.parse(iso));
    expect(parseInstant(text, 60)).toBe(Date.parse(iso));
  });

  it.each([
    '2026-11-20T10:15:00+1',
    '2026-11-20T10:15:00+01:',
    '2026-11-20T10:15:00+011',
    '2026-11-20T10:15:00+24',
  ])('an offset that is not ±hh, ±hhmm or ±hh:mm does not parse: %s', (text) => {
    expect(parseInstant(text)).toBeUndefined();
  });

  it('keeps years below 100 as they are', () => {
    expect(new Date(parseInstant('0050-01-01T00:00:00Z')!).getUTCFullYear()).toBe(50);
  });

  describe('a date-time without a zone, read in a configured zone (WEBHOOK_DATE_ZONE)', () => {
    it.each([
      ['UTC', '2026-11-20T10:15:30.123', 0, '2026-11-20T10:15:30.123Z'],
      ['one hour east', '2026-11-20T11:15:30', 60, '2026-11-20T10:15:30.000Z'],
      ['five and a half hours east', '2026-11-20T15:45:00', 330, '2026-11-20T10:15:00.000Z'],
      ['five hours west', '2026-11-20T05:15', -300, '2026-11-20T10:15:00.000Z'],
      ['across a day and a year', '2027-01-01T00:30:00', 60, '2026-12-31T23:30:00.000Z'],
    ])('%s: %s is %s', (_, text, offset, iso) => {
      expect(parseInstant(text, offset)).toBe(Date.parse(iso));
    });

    it('leaves a date-time that names its own zone as it says', () => {
      expect(parseInstant('2026-11-20T10:15:00Z', 60)).toBe(Date.parse('2026-11-20T10:15:00Z'));
      expect(parseInstant('2026-11-20T10:15:00-05:00', 60)).toBe(Date.parse('2026-11-20T15:15:00Z'));
    });

    it('still refuses what is not a date-time', () => {
      expect(parseInstant('2026-11-20', 0)).toBeUndefined();
      expect(parseInstant('2026-02-30T00:00:00', 0)).toBeUndefined();
      expect(parseInstant('2026-11-20T10:15:00 junk', 0)).toBeUndefined();
    });

    it("never depends on the machine's time zone", () => {
      const zone = process.env.TZ;
      try {
        process.env.TZ = 'Pacific/Kiritimati';
        expect(parseInstant('2026-11-20T10:15:00', 0)).toBe(Date.parse('2026-11-20T10:15:00Z'));
      } finally {
        if (zone === undefined) delete process.env.TZ;
        else process.env.TZ = zone;
      }
    });
  });
});

describe('parseInstantBytes, the fast path of the router', () => {
  /** Date-times near the common form, and every way to leave it: parts out of range, other zones, junk. */
  const part = (digits: number, max: number) =>
    fc.oneof(
      { weight: 12, arbitrary: fc.integer({ min: 0, max }).map((n) => String(n).padStart(digits, '0')) },
      {
        weight: 1,
        arbitrary: fc.constantFrom('', '0', '9'.repeat(digits + 1), 'x'.repeat(digits), '٣'.repeat(digits)),
      },
    );
  const often = <T>(common: T, rare: fc.Arbitrary<T>) =>
    fc.oneof({ weight: 6, arbitrary: fc.constant(common) }, { weight: 1, arbitrary: rare });
  const dateTime = fc
    .tuple(
      part(4, 9999),
      part(2, 13),
      part(2, 31),
      often('T', fc.constantFrom('t', ' ', 'x')),
      part(2, 24),
      part(2, 60),
      often<string | null>('30', fc.option(part(2, 61))),
      fc.option(
        fc.tuple(
          often('.', fc.constantFrom(',', ':')),
          fc.oneof(
            { weight: 6, arbitrary: fc.stringMatching(/^[0-9]{1,12}$/) },
            { weight: 1, arbitrary: fc.stringMatching(/^[0-9]{0,4}[xZ]?$/) },
          ),
        ),
      ),
      fc.oneof(
        { weight: 4, arbitrary: fc.constantFrom('Z', 'z') },
        { weight: 1, arbitrary: fc.constantFrom('', 'Z ', '+', 'GMT', '+01', '-1:00') },
        {
          weight: 4,
          arbitrary: fc
            .tuple(fc.constantFrom('+', '-'), part(2, 24), often(':', fc.constantFrom('', '.')), part(2, 60))
            .map((z) => z.join('')),
        },
      ),
    )
    .map(
      ([y, mo, d, t, h, mi, s, frac, zone]) =>
        `${y}-${mo}-${d}${t}${h}:${mi}${s === null ? '' : `:${s}`}${frac === null ? '' : frac.join('')}${zone}`,
    );

  it('answers what parseInstant answers for the same text, zone given or not', () => {
    let instants = 0;
    fc.assert(
      fc.property(
        dateTime,
        fc.option(fc.integer({ min: -720, max: 840 })),
        fc.nat(3),
        (text, zone, padding) => {
          const offset = zone ?? undefined;
          // Within a larger buffer, as in a body.
          const bytes = Buffer.from(`${'"'.repeat(padding)}${text}"`, 'utf8');
          const end = bytes.length - 1;
          const expected = parseInstant(text, offset);
          expect(parseInstantBytes(bytes, padding, end, offset)).toBe(expected);
          if (expected !== undefined) instants++;
        },
      ),
      { numRuns: 20_000 },
    );
    // Not only refusals: many generated texts name an instant.
    expect(instants).toBeGreaterThan(500);
  });

  it('reads the common form from the bytes', () => {
    const bytes = Buffer.from('2026-11-20T10:15:30.123456+01:00');
    expect(parseInstantBytes(bytes, 0, bytes.length)).toBe(Date.parse('2026-11-20T09:15:30.123Z'));
  });
});
