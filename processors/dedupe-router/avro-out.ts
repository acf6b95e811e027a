// Writes Avro values field by field into one reused buffer, from JavaScript strings and from byte ranges
// of a body (strings copied, never decoded): the bytes avsc writes for the same values, for the
// router's fast path. A value is copied out once, with the Confluent header's room ahead of it.
import { AVRO_HEADER_BYTES } from '../../schemas/serde.js';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

let buffer = Buffer.allocUnsafe(16 * 1024);
let pos = 0;
/** Where JSON text is made compact before it is written as a string (its length goes first). */
let scratch = Buffer.allocUnsafe(16 * 1024);

/** Below this many bytes a copy is a loop here: Buffer.copy's own checks cost more than the bytes. */
const SHORT_COPY = 48;

/** Copies `source[start, end)` to `target` at `at`; returns the bytes copied. */
function copy(source: Buffer, start: number, end: number, target: Buffer, at: number): number {
  const length = end - start;
  if (length >= SHORT_COPY) return source.copy(target, at, start, end);
  for (let k = 0; k < length; k++) target[at + k] = source[start + k]!;
  return length;
}

function ensure(bytes: number): void {
  if (pos + bytes <= buffer.length) return;
  const grown = Buffer.allocUnsafe(Math.max(2 * buffer.length, pos + bytes));
  buffer.copy(grown, 0, 0, pos);
  buffer = grown;
}

/** Starts a value: the header's room is left free. */
export function begin(): void {
  pos = AVRO_HEADER_BYTES;
}

/** The value written since begin(), in a buffer of its own (header room included). */
export function finish(): Buffer {
  const out = Buffer.allocUnsafe(pos);
  copy(buffer, 0, pos, out, 0);
  return out;
}

/** An Avro long (or int): zig-zag, then base-128 varint, as avsc's Tap.writeLong (safe integers). */
export function writeLong(value: number): void {
  ensure(10);
  let f = value >= 0 ? value * 2 : -value * 2 - 1;
  while (f >= 128) {
    buffer[pos++] = (f % 128) | 0x80;
    f = Math.floor(f / 128);
  }
  buffer[pos++] = f;
}

export function writeBoolean(value: boolean): void {
  ensure(1);
  buffer[pos++] = value ? 1 : 0;
}

/** A union's branch index (a long). */
export const writeBranch = writeLong;

/**
 * A well-formed string (no lone surrogate: `isWellFormed()`), as UTF-8 with its byte length first. avsc
 * writes a lone surrogate differently below 65 bytes than above: callers leave such strings to it.
 */
export function writeString(value: string): void {
  if (value.length <= 64) {
    // A short ASCII string (ids, UUIDs) byte by byte: cheaper than Buffer's write for a few bytes.
    const start = pos;
    writeLong(value.length);
    ensure(value.length);
    let k = 0;
    for (; k < value.length; k++) {
      const c = value.charCodeAt(k);
      if (c >= 0x80) break;
      buffer[pos + k] = c;
    }
    if (k === value.length) {
      pos += k;
      return;
    }
    pos = start;
  }
  const length = Buffer.byteLength(value);
  writeLong(length);
  ensure(length);
  pos += buffer.write(value, pos, length, 'utf8');
}

/** Bytes already encoded (a string's length and bytes, cached), as they are. */
export function writeEncoded(bytes: Buffer): void {
  ensure(bytes.length);
  pos += copy(bytes, 0, bytes.length, buffer, pos);
}

/** A string whose UTF-8 bytes are `source[start, end)`. */
export function writeBytesAsString(source: Buffer, start: number, end: number): void {
  writeLong(end - start);
  ensure(end - start);
  pos += copy(source, start, end, buffer, pos);
}

/**
 * A string of `parts` byte ranges of `source` (start, end pairs from `from`, `count` of them) joined by
 * dots: a leaf's path from its keys.
 */
export function writeJoinedAsString(source: Buffer, ranges: Int32Array, from: number, count: number): void {
  let length = count - 1;
  for (let k = from; k < from + count; k++) length += ranges[2 * k + 1]! - ranges[2 * k]!;
  writeLong(length);
  ensure(length);
  for (let k = from; k < from + count; k++) {
    if (k !== from) buffer[pos++] = 0x2e;
    pos += copy(source, ranges[2 * k]!, ranges[2 * k + 1]!, buffer, pos);
  }
}

/**
 * JSON text `source[start, end)` (checked JSON, no duplicate key) as the compact text lossless-json's
 * stringify writes for its parse: whitespace between tokens dropped, a string with an escape written
 * again as JSON.stringify writes it, everything else (numbers' text included) copied. `irregular` false:
 * the text has neither, and is copied whole.
 */
export function writeCompactJson(source: Buffer, start: number, end: number, irregular: boolean): void {
  if (!irregular) {
    writeBytesAsString(source, start, end);
    return;
  }
  // Never longer than the text: an escaped string is written again no longer than it was sent.
  if (scratch.length < end - start) scratch = Buffer.allocUnsafe(2 * (end - start));
  let length = 0;
  let segment = start;
  let k = start;
  while (k < end) {
    const c = source[k]!;
    if (c === 0x20 || c === 0x0a || c === 0x09 || c === 0x0d) {
      length += source.copy(scratch, length, segment, k);
      segment = ++k;
    } else if (c === QUOTE) {
      const open = k;
      let escaped = false;
      k++;
      for (;;) {
        const s = source[k]!;
        if (s === QUOTE) break;
        if (s === BACKSLASH) {
          escaped = true;
          k += 2;
        } else k++;
      }
      k++;
      if (escaped) {
        length += source.copy(scratch, length, segment, open);
        const again = JSON.stringify(JSON.parse(source.toString('utf8', open, k)) as string);
        length += scratch.write(again, length, 'utf8');
        segment = k;
      }
    } else k++;
  }
  length += source.copy(scratch, length, segment, end);
  writeBytesAsString(scratch, 0, length);
}
