// The bytes of JSON's structure, as the two byte-level readers of a body (fast-json.ts, which builds
// values, and delivery-scan.ts, which only indexes them) compare them.
export const QUOTE = 0x22;
export const BACKSLASH = 0x5c;
export const OPEN_BRACE = 0x7b;
export const CLOSE_BRACE = 0x7d;
export const OPEN_BRACKET = 0x5b;
export const CLOSE_BRACKET = 0x5d;
export const COMMA = 0x2c;
export const COLON = 0x3a;
export const MINUS = 0x2d;
export const PLUS = 0x2b;
export const DOT = 0x2e;
export const ZERO = 0x30;
export const NINE = 0x39;

/**
 * The deepest nesting of arrays and objects a body may have (its top object is level 1). Every reader
 * after the byte scans recurses once a level (lossless-json's parse and stringify, fast-json.ts,
 * field-paths.ts, the tables stage's flatten), and a deeper body would throw RangeError from wherever
 * the stack ran out, at a depth that varies with the stack left: route() refuses it (`body-not-json`)
 * and the fast path's scan gives up on it, so both decide alike at every depth. Those readers reach
 * over 2,500 levels in Node's default stack; GraphQL answers nest a few dozen.
 */
export const MAX_JSON_DEPTH = 512;

/**
 * Whether JSON bytes nest arrays and objects deeper than `limit` (brackets inside strings not counted).
 * A loop, not a recursion, so it measures any depth; bytes that are not JSON are measured as far as
 * they read as JSON's structure, which bounds how deep a parse of them gets before it fails.
 */
export function nestsDeeperThan(bytes: Uint8Array, limit: number): boolean {
  const length = bytes.length;
  // Deeper than `limit` takes more than `limit` opening bytes.
  if (length <= limit) return false;
  let depth = 0;
  for (let k = 0; k < length; k++) {
    const c = bytes[k];
    if (c === QUOTE) {
      // To the closing quote, past escapes (a UTF-8 sequence's bytes are all above 0x7f).
      for (k++; k < length; k++) {
        const s = bytes[k];
        if (s === BACKSLASH) k++;
        else if (s === QUOTE) break;
      }
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > limit) return true;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) depth--;
  }
  return false;
}
