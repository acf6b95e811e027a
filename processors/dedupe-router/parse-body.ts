// Parses a raw webhook body losslessly: numbers keep their exact text, so money is never rounded.
import { isLosslessNumber, LosslessNumber, parse, stringify } from 'lossless-json';
import { NOT_HANDLED, parseJsonFast, stringifyJsonFast } from './fast-json.js';
import { MAX_JSON_DEPTH, nestsDeeperThan } from './json-bytes.js';

/** A JSON value as parsed here: every number is a LosslessNumber holding its text as sent. */
export type JsonValue = string | boolean | null | LosslessNumber | JsonValue[] | JsonObject;
export interface JsonObject {
  [key: string]: JsonValue;
}

export type ParseBodyFailureReason = 'body-not-json' | 'body-not-object';

export type ParseBodyResult =
  | { readonly ok: true; readonly value: JsonObject }
  | { readonly ok: false; readonly reason: ParseBodyFailureReason; readonly message: string };

// fatal: bytes that are not UTF-8 are not JSON (RFC 8259 §8.1); silently replacing them would
// change ids and values. The decoder strips a leading BOM, which some senders add.
const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Parses the body bytes. Fails (with the DLQ reason) on bytes that are not UTF-8 JSON, on a
 * duplicate key with two different values (which one is meant is unknowable), on arrays and objects
 * nested deeper than MAX_JSON_DEPTH (json-bytes.ts), and on anything but an object at the top.
 */
export function parseBody(body: Uint8Array): ParseBodyResult {
  let text: string;
  try {
    text = utf8.decode(body);
  } catch {
    return { ok: false, reason: 'body-not-json', message: 'the body is not valid UTF-8' };
  }
  // Before the parse, which recurses once a level: deeper, it (or what reads its value) could overflow the stack.
  if (nestsDeeperThan(body, MAX_JSON_DEPTH)) {
    return {
      ok: false,
      reason: 'body-not-json',
      message: `the body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels, the most read (MAX_JSON_DEPTH)`,
    };
  }
  let value: unknown = parseJsonFast(text);
  try {
    // What the fast parse does not take on (errors included) is lossless-json's to parse, or to refuse in its words.
    if (value === NOT_HANDLED) value = parse(text);
  } catch (err) {
    const detail = err instanceof Error ? err.message : String(err);
    return { ok: false, reason: 'body-not-json', message: `the body is not JSON: ${detail}` };
  }
  if (!isJsonObject(value as JsonValue)) {
    return {
      ok: false,
      reason: 'body-not-object',
      message: `the body is JSON but not an object (${describeJson(value as JsonValue)})`,
    };
  }
  return { ok: true, value: value as JsonObject };
}

export function isJsonObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !isLosslessNumber(value);
}

/** A short name for a value's JSON type, for messages. */
export function describeJson(value: JsonValue | undefined): string {
  if (value === undefined) return 'missing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (isLosslessNumber(value)) return 'a number';
  if (typeof value === 'object') return 'an object';
  // Said when a string was wanted but an empty one came: "is a string" would read as no fault at all.
  if (value === '') return 'an empty string';
  return `a ${typeof value}`;
}

/** Parses JSON text this module wrote (an event's `data`), numbers kept exact. Throws if not JSON. */
export function parseJsonText(text: string): JsonValue {
  // parseJsonFast builds lossless-json's values; what it does not take on, lossless-json parses (or refuses).
  const fast = parseJsonFast(text);
  return fast !== NOT_HANDLED ? fast : (parse(text) as JsonValue);
}

/** Compact JSON text of a parsed value; numbers are written exactly as they were sent. */
export function toJsonText(value: JsonValue): string {
  const fast = stringifyJsonFast(value);
  if (fast !== NOT_HANDLED) return fast;
  // stringify returns undefined only for undefined or functions, which a JsonValue never is.
  return stringify(value) as string;
}

/**
 * A scalar as text, as tables and typed fields carry it: strings as they are, numbers as sent,
 * booleans as `true`/`false`, null as null; arrays and objects as their JSON text.
 */
export function scalarText(value: JsonValue): string | null {
  if (value === null) return null;
  if (typeof value === 'string') return value;
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (isLosslessNumber(value)) return value.value;
  return toJsonText(value);
}

export { isLosslessNumber, LosslessNumber };
