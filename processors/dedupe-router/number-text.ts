// Reads the text of a JSON number exactly, as decimal digits: never through a double, whose rounding
// would make 2.0000000000000001 an integer and 9007199254740993 one in range.

/** A JSON number's whole text (RFC 8259 §6): no `+` in front, no leading zero, no whitespace. */
export const JSON_NUMBER_TEXT = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;

/** An integer as JSON writes one: no fraction, no exponent. */
export const INTEGER_TEXT = /^-?(0|[1-9]\d*)$/;

const NUMBER_PARTS = /^(-?)(0|[1-9]\d*)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;

/**
 * The integer a JSON number's text stands for, however written (`2`, `2.0`, `2e0`, `20e-1`), when its
 * magnitude is at most `limit` (itself at most Number.MAX_SAFE_INTEGER, so the answer is exact); undefined
 * for a fraction, a value beyond the limit, or text that is not a JSON number.
 */
export function exactInteger(text: string, limit: number): number | undefined {
  const parts = NUMBER_PARTS.exec(text);
  if (parts === null) return undefined;
  const [, sign, whole = '', fraction = '', exponent = '0'] = parts;
  const digits = `${whole}${fraction}`.replace(/^0+/, '');
  // The value is significand × 10^scale; the trailing zeros go into the scale, so the significand ends
  // in a digit other than 0 and a negative scale always leaves a fraction.
  const significand = withoutTrailingZeros(digits);
  if (significand === '') return sign === '-' ? -0 : 0;
  const scale = BigInt(exponent) - BigInt(fraction.length) + BigInt(digits.length - significand.length);
  if (scale < 0n) return undefined;
  // Compared in digits first: an exponent such as 1e999999 is never expanded.
  if (BigInt(significand.length) + scale > BigInt(String(limit).length)) return undefined;
  const magnitude = BigInt(significand) * 10n ** scale;
  if (magnitude > BigInt(limit)) return undefined;
  return sign === '-' ? -Number(magnitude) : Number(magnitude);
}

/**
 * `digits` without its trailing zeros. A loop, not `/0+$/`: that expression, tried from every zero of a
 * run, backtracks quadratically over a long run of zeros followed by another digit (80,000 zeros took
 * 7 s, and a number's length is the sender's).
 */
export function withoutTrailingZeros(digits: string): string {
  let end = digits.length;
  while (end > 0 && digits.charCodeAt(end - 1) === 48) end--;
  return digits.slice(0, end);
}
