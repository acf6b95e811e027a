import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AVRO_LONG_MAX } from '../../../../processors/dedupe-router/contract.js';
import {
  exactInteger,
  INTEGER_TEXT,
  JSON_NUMBER_TEXT,
  withoutTrailingZeros,
} from '../../../../processors/dedupe-router/number-text.js';

describe('exactInteger reads a JSON number as an integer on its decimal digits', () => {
  it.each([
    ['2', 2],
    ['2.0', 2],
    ['2e0', 2],
    ['2E+0', 2],
    ['20e-1', 2],
    ['0.2e1', 2],
    ['100e-2', 1],
    ['1.5e1', 15],
    ['-3', -3],
    ['-3.000', -3],
    ['0', 0],
    ['0.000e-7', 0],
    ['1e15', 1e15],
    ['9007199254740990', AVRO_LONG_MAX],
    ['900719925474099e1', AVRO_LONG_MAX],
    ['-9007199254740990.0', -AVRO_LONG_MAX],
  ])('%s is the integer %d', (text, integer) => {
    expect(exactInteger(text, AVRO_LONG_MAX)).toBe(integer);
  });

  it.each([
    // A double rounds each of these to an integer in range: the digits do not.
    ['2.0000000000000001', 'a fraction a double loses'],
    ['9007199254740993', 'beyond 2^53, which a double reads as 2^53'],
    ['9007199254740991', 'one past the limit'],
    ['-9007199254740991', 'one past the limit, negative'],
    ['1e16', 'beyond the limit, by its exponent'],
    ['10000000000000000000e-3', 'beyond the limit, written long'],
    ['1e999999', 'an exponent never expanded'],
    ['2.5', 'a fraction'],
    ['1.25e1', 'a fraction left after the exponent'],
    ['1e-999999', 'a tiny fraction'],
    ['+2', 'not JSON: a plus sign'],
    ['02', 'not JSON: a leading zero'],
    [' 2', 'not JSON: whitespace'],
    ['2.', 'not JSON: no digit after the point'],
    ['', 'empty'],
  ])('%s is not (%s)', (text) => {
    expect(exactInteger(text, AVRO_LONG_MAX)).toBeUndefined();
  });

  it('drops trailing zeros as /0+$/ does, in one pass over a number as long as a body', () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom('0', '0', '1', '9'), maxLength: 16 }), (digits) => {
        expect(withoutTrailingZeros(digits)).toBe(digits.replace(/0+$/, ''));
      }),
      { numRuns: 10_000 },
    );
    // The expression took about 7 s over 80,000 zeros followed by another digit.
    const zeros = '0'.repeat(1_000_000);
    expect(exactInteger(`1${zeros}1`, AVRO_LONG_MAX)).toBeUndefined();
    expect(exactInteger(`1${zeros}1e-1000001`, AVRO_LONG_MAX)).toBeUndefined();
    expect(exactInteger(`1.${zeros}`, AVRO_LONG_MAX)).toBe(1);
  });

  it('JSON_NUMBER_TEXT is the whole text of a JSON number; INTEGER_TEXT one without fraction or exponent', () => {
    for (const text of ['0', '-0.5', '210.10', '1e3', '1E-3', '2.5e+10'])
      expect(JSON_NUMBER_TEXT.test(text)).toBe(true);
    for (const text of ['', '.5', '1.', '01', '+1', '1,000.00', '1 ', 'NaN', 'Infinity', '0x10', '1e'])
      expect(JSON_NUMBER_TEXT.test(text), text).toBe(false);
    for (const text of ['0', '-3', '42']) expect(INTEGER_TEXT.test(text)).toBe(true);
    for (const text of ['2.0', '2e0', '-', '007', '+2', '2 '])
      expect(INTEGER_TEXT.test(text), text).toBe(false);
  });
});
