// A faster lossless JSON parse for the common body: the same values lossless-json's parse builds
// (strings sliced whole instead of grown one character at a time), or NOT_HANDLED for anything it does
// not take on, which then goes through lossless-json unchanged (its errors are the dead letters' words).
import { LosslessNumber } from 'lossless-json';
import {
  BACKSLASH,
  CLOSE_BRACE,
  CLOSE_BRACKET,
  COLON,
  COMMA,
  DOT,
  MINUS,
  NINE,
  OPEN_BRACE,
  OPEN_BRACKET,
  PLUS,
  QUOTE,
  ZERO,
} from './json-bytes.js';
import type { JsonObject, JsonValue } from './parse-body.js';

/** The text is not one this parser takes on: parse it with lossless-json. */
export const NOT_HANDLED: unique symbol = Symbol('not handled');

const isDigit = (code: number) => code >= ZERO && code <= NINE;

/**
 * Thrown inside, caught at the top: the text needs lossless-json (an error, a duplicate key, a key
 * `__proto__`). A shared object, so giving up allocates nothing.
 */
const GIVE_UP = Object.freeze({ notHandled: true });

// The parse in progress: module state, not closures made per call (a body is parsed synchronously, one
// at a time).
let text = '';
let i = 0;
let length = 0;

function skipWhitespace(): void {
  for (;;) {
    const c = text.charCodeAt(i);
    if (c === 0x20 || c === 0x0a || c === 0x09 || c === 0x0d) i++;
    else return;
  }
}

function parseString(): string {
  // At the opening quote.
  const start = ++i;
  for (;;) {
    if (i >= length) throw GIVE_UP;
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      i++;
      return text.slice(start, i - 1);
    }
    if (c === BACKSLASH) return parseEscapedString(start - 1);
    // A control character must be escaped (lossless-json and JSON.parse refuse it).
    if (c < 0x20) throw GIVE_UP;
    i++;
  }
}

/** A string with escapes: its literal read by JSON.parse, which reads escapes as lossless-json does. */
function parseEscapedString(quoteAt: number): string {
  for (;;) {
    if (i >= length) throw GIVE_UP;
    const c = text.charCodeAt(i);
    if (c === BACKSLASH) i += 2;
    else if (c === QUOTE) break;
    else i++;
  }
  i++;
  let value: unknown;
  try {
    value = JSON.parse(text.slice(quoteAt, i));
  } catch {
    throw GIVE_UP;
  }
  if (typeof value !== 'string') throw GIVE_UP;
  return value;
}

function parseNumber(): LosslessNumber {
  const start = i;
  skipNumber();
  return new LosslessNumber(text.slice(start, i));
}

/** Moves past a number (lossless-json's grammar). */
function skipNumber(): void {
  if (text.charCodeAt(i) === MINUS) i++;
  const first = text.charCodeAt(i);
  if (first === ZERO) i++;
  else if (first > ZERO && first <= NINE) {
    i++;
    while (isDigit(text.charCodeAt(i))) i++;
  } else throw GIVE_UP;
  if (text.charCodeAt(i) === DOT) {
    i++;
    if (!isDigit(text.charCodeAt(i))) throw GIVE_UP;
    while (isDigit(text.charCodeAt(i))) i++;
  }
  const e = text.charCodeAt(i);
  if (e === 0x65 || e === 0x45) {
    i++;
    const sign = text.charCodeAt(i);
    if (sign === MINUS || sign === PLUS) i++;
    if (!isDigit(text.charCodeAt(i))) throw GIVE_UP;
    while (isDigit(text.charCodeAt(i))) i++;
  }
}

function parseKeyword<T>(word: string, value: T): T {
  if (!text.startsWith(word, i)) throw GIVE_UP;
  i += word.length;
  return value;
}

/** At `{`: moves into the object; true when it is empty (then past it). */
function enterObject(): boolean {
  i++;
  skipWhitespace();
  if (text.charCodeAt(i) !== CLOSE_BRACE) return false;
  i++;
  return true;
}

/** At a key's opening quote: the key, moved past it and its colon. */
function readKey(): string {
  if (text.charCodeAt(i) !== QUOTE) throw GIVE_UP;
  const key = parseString();
  skipWhitespace();
  if (text.charCodeAt(i) !== COLON) throw GIVE_UP;
  i++;
  return key;
}

/** After a member's value: true past the object's closing brace, false past a comma. */
function lastMember(): boolean {
  const c = text.charCodeAt(i);
  if (c === COMMA) {
    i++;
    skipWhitespace();
    return false;
  }
  if (c === CLOSE_BRACE) {
    i++;
    return true;
  }
  throw GIVE_UP;
}

function parseObject(): JsonObject {
  const object: JsonObject = {};
  if (enterObject()) return object;
  do {
    const key = readKey();
    // lossless-json decides on a key given twice (equal values, or an error) and defines `__proto__`.
    if (key === '__proto__' || Object.hasOwn(object, key)) throw GIVE_UP;
    object[key] = parseValue();
  } while (!lastMember());
  return object;
}

function parseArray(): JsonValue[] {
  i++;
  const array: JsonValue[] = [];
  skipWhitespace();
  if (text.charCodeAt(i) === CLOSE_BRACKET) {
    i++;
    return array;
  }
  for (;;) {
    array.push(parseValue());
    const c = text.charCodeAt(i);
    if (c === COMMA) i++;
    else if (c === CLOSE_BRACKET) {
      i++;
      return array;
    } else throw GIVE_UP;
  }
}

/** A value with the whitespace around it. */
function parseValue(): JsonValue {
  skipWhitespace();
  const c = text.charCodeAt(i);
  let value: JsonValue;
  if (c === QUOTE) value = parseString();
  else if (c === OPEN_BRACE) value = parseObject();
  else if (c === OPEN_BRACKET) value = parseArray();
  else if (c === MINUS || isDigit(c)) value = parseNumber();
  else if (c === 0x74) value = parseKeyword('true', true);
  else if (c === 0x66) value = parseKeyword('false', false);
  else if (c === 0x6e) value = parseKeyword('null', null);
  else throw GIVE_UP;
  skipWhitespace();
  return value;
}

/**
 * Parses JSON text as lossless-json's parse() does (numbers as LosslessNumber with their text), or
 * answers NOT_HANDLED: for text that is not JSON, a key given twice, a key `__proto__`, and a string
 * escape that JSON.parse does not read as one string.
 */
export function parseJsonFast(source: string): JsonValue | typeof NOT_HANDLED {
  text = source;
  i = 0;
  length = source.length;
  try {
    const value = parseValue();
    return i === length ? value : NOT_HANDLED;
  } catch {
    // GIVE_UP, or anything else (nesting deeper than the stack): lossless-json decides.
    return NOT_HANDLED;
  } finally {
    // Not kept alive by this module until the next parse.
    text = '';
  }
}

/** GraphQL's type discriminator: flattenFields (field-paths.ts) leaves it out at every depth. */
const TYPENAME = '__typename';

/** An object's leaves as flattenJsonFast reads them: `count` paths and their values, in the text's order. */
export interface Leaves {
  paths: string[];
  values: (string | null)[];
  count: number;
}

/** The leaves being read (one text at a time, as the parse's own state). */
let leaves: Leaves = { paths: [], values: [], count: 0 };

/**
 * Keys of one object flattened here; an object with more is left to the parse tree. The duplicate check
 * compares each key with those before it, so 96,000 keys (a 1 MiB body) took 69 s this way, 0.4 s by
 * the tree, and one such record held the tables stage past its transaction's timeout.
 */
const MAX_FLATTENED_KEYS = 64;

/** The keys of the objects being flattened (a stack to `flatTop`: each object compares its keys with its own). */
const flatKeys: string[] = [];
let flatTop = 0;

function addLeaf(path: string, value: string | null): void {
  const n = leaves.count++;
  leaves.paths[n] = path;
  leaves.values[n] = value;
}

/**
 * At `{`: its leaves under `prefix`, as flattenFields and scalarText read the parsed object. Returns
 * false when it has no key but `__typename` (then it is a leaf itself: the caller parses it).
 */
function flattenObject(prefix: string): boolean {
  if (enterObject()) return false;
  const base = flatTop;
  let walked = false;
  do {
    const key = readKey();
    // As parseObject: a key given twice and `__proto__` are lossless-json's. An empty key or one with a
    // dot could give two leaves one path, and which value wins is the parsed object's key order.
    if (key === '__proto__' || key === '' || key.includes('.')) throw GIVE_UP;
    for (let k = base; k < flatTop; k++) if (flatKeys[k] === key) throw GIVE_UP;
    // Each key is compared with those before it: an object with many is the tree's (linear) to flatten.
    if (flatTop - base >= MAX_FLATTENED_KEYS) throw GIVE_UP;
    flatKeys[flatTop++] = key;
    if (key === TYPENAME) parseValue();
    else {
      walked = true;
      flattenValue(prefix === '' ? key : `${prefix}.${key}`);
    }
  } while (!lastMember());
  flatTop = base;
  return walked;
}

/** A member's value with the whitespace around it: its leaves, or itself as a leaf. */
function flattenValue(path: string): void {
  skipWhitespace();
  const c = text.charCodeAt(i);
  if (c === QUOTE) addLeaf(path, parseString());
  else if (c === MINUS || isDigit(c)) {
    const start = i;
    skipNumber();
    addLeaf(path, text.slice(start, i));
  } else if (c === OPEN_BRACE) {
    const start = i;
    if (!flattenObject(path)) {
      // Empty, or `__typename` alone: a leaf, as its compact JSON.
      i = start;
      addLeaf(path, write(parseObject()));
    }
  } else if (c === OPEN_BRACKET) addLeaf(path, write(parseArray()));
  else if (c === 0x74) addLeaf(path, parseKeyword('true', 'true'));
  else if (c === 0x66) addLeaf(path, parseKeyword('false', 'false'));
  else if (c === 0x6e) addLeaf(path, parseKeyword('null', null));
  else throw GIVE_UP;
  skipWhitespace();
}

/**
 * An object's leaves as text by dotted path, without its parse tree: into `out` (from its start)
 * what flattenFields and scalarText give for parseJsonText's object (strings as they are, numbers as
 * sent, `true`/`false`, null; arrays and `__typename`-only objects as compact JSON), each path once.
 * False (and `out` empty) for text parseJsonFast does not take on, for anything but an object, and for
 * an empty key or one with a dot.
 */
export function flattenJsonFast(source: string, out: Leaves): boolean {
  text = source;
  i = 0;
  length = source.length;
  leaves = out;
  out.count = 0;
  flatTop = 0;
  let read = false;
  try {
    skipWhitespace();
    if (text.charCodeAt(i) === OPEN_BRACE) {
      flattenObject('');
      skipWhitespace();
      read = i === length;
    }
  } catch {
    // GIVE_UP, or anything else (nesting deeper than the stack): the tree decides.
  } finally {
    text = '';
  }
  // Nothing of a text given up on.
  if (!read) out.count = 0;
  return read;
}

/**
 * lossless-json's stringify() of a parsed value (strings, booleans, null, LosslessNumber, arrays, plain
 * objects), without its per-call closures and checks for replacers, indentation and number stringifiers;
 * NOT_HANDLED for anything else in the value (then lossless-json writes it).
 */
export function stringifyJsonFast(value: unknown): string | typeof NOT_HANDLED {
  try {
    return write(value);
  } catch {
    return NOT_HANDLED;
  }
}

function write(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (value === null) return 'null';
  if (value === true) return 'true';
  if (value === false) return 'false';
  if (value instanceof LosslessNumber) return value.value;
  if (Array.isArray(value)) {
    let out = '[';
    for (let n = 0; n < value.length; n++) out += n === 0 ? write(value[n]) : `,${write(value[n])}`;
    return `${out}]`;
  }
  if (typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    const object = value as Record<string, unknown>;
    let out = '{';
    let first = true;
    for (const key in object) {
      if (!Object.hasOwn(object, key)) continue;
      out += `${first ? '' : ','}${JSON.stringify(key)}:${write(object[key])}`;
      first = false;
    }
    return `${out}}`;
  }
  // A JavaScript number, undefined, a class instance, an object with toJSON…: lossless-json's rules.
  throw GIVE_UP;
}
