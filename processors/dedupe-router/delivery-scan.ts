// Reads a common delivery body once, as bytes, into an index of byte ranges (webhook fields, query
// variables, the root record, its id and its leaves' paths) without building a parse tree: what the
// router's fast path (fast-route.ts) writes its Avro from. Anything it does not take on is left to
// parseBody, zod and route() unchanged (the answer is then false).
import { isUtf8 } from 'node:buffer';
import {
  BACKSLASH,
  CLOSE_BRACE,
  CLOSE_BRACKET,
  COLON,
  COMMA,
  DOT,
  MAX_JSON_DEPTH,
  MINUS,
  NINE,
  OPEN_BRACE,
  OPEN_BRACKET,
  PLUS,
  QUOTE,
  ZERO,
} from './json-bytes.js';

const UNDERSCORE = 0x5f;

/** Keys per object compared for duplicates; an object with more is left to the full parse. */
const MAX_KEYS = 64;

/**
 * Kinds of typed fields: what the fast route takes besides null. energySwitchSchema also reads a money
 * amount or an integer sent as a string (and 2.0 as an integer): those are left to route().
 */
const STRING = 0;
const NUMBER = 1;
const OBJECT = 2;
/** A string or a number, kept as its text (user.tenantId: the contract gives it no type). */
const TEXT = 3;

// The typed fields of an EnergySwitch record (contract §2.2), by slot: the root's, then its objects'.
export const DATE = 0;
export const USER_SWITCH_REFERENCE_ID = 1;
export const POSTCODE = 2;
export const TARIFF_NAME = 3;
export const FUEL_TYPE = 4;
export const FUELS_SWITCHED = 5;
export const USER = 6;
export const PROVIDER = 7;
export const PROJECTED_SPEND = 8;
export const SAVINGS = 9;
export const COMMISSION = 10;
export const USER_ID = 11;
export const USER_TENANT_ID = 12;
export const PROVIDER_CODE = 13;
export const PROVIDER_NAME = 14;
export const PROJECTED_SPEND_CURRENCY = 15;
export const PROJECTED_SPEND_AMOUNT = 16;
export const SAVINGS_CURRENCY = 17;
export const SAVINGS_AMOUNT = 18;
export const FUELS_WAITING_FOR_UPDATE = 19;
export const FUELS_WITH_SWITCH_TERMINATED = 20;
export const FUELS_WITH_COMMISSION_EXPECTED = 21;
export const FUELS_WITH_COMMISSION_RECEIVED = 22;
export const STATUS_DATE = 23;
export const STATUS = 24;
const SLOTS = 25;

const SLOT_KINDS = [
  STRING,
  STRING,
  STRING,
  STRING,
  STRING,
  NUMBER,
  OBJECT,
  OBJECT,
  OBJECT,
  OBJECT,
  OBJECT,
  STRING,
  TEXT, // USER_TENANT_ID
  STRING,
  STRING,
  STRING,
  NUMBER,
  STRING,
  NUMBER,
  NUMBER,
  NUMBER,
  NUMBER,
  NUMBER,
  STRING,
  STRING,
];

/** Each typed object's fields: names and slots. */
const CHILD_NAMES: Record<number, readonly string[]> = {
  [USER]: ['id', 'tenantId'],
  [PROVIDER]: ['code', 'name'],
  [PROJECTED_SPEND]: ['currency', 'amount'],
  [SAVINGS]: ['currency', 'amount'],
  [COMMISSION]: [
    'fuelsWaitingForUpdate',
    'fuelsWithSwitchTerminated',
    'fuelsWithCommissionExpected',
    'fuelsWithCommissionReceived',
    'statusDate',
    'status',
  ],
};
const CHILD_SLOTS: Record<number, readonly number[]> = {
  [USER]: [USER_ID, USER_TENANT_ID],
  [PROVIDER]: [PROVIDER_CODE, PROVIDER_NAME],
  [PROJECTED_SPEND]: [PROJECTED_SPEND_CURRENCY, PROJECTED_SPEND_AMOUNT],
  [SAVINGS]: [SAVINGS_CURRENCY, SAVINGS_AMOUNT],
  [COMMISSION]: [
    FUELS_WAITING_FOR_UPDATE,
    FUELS_WITH_SWITCH_TERMINATED,
    FUELS_WITH_COMMISSION_EXPECTED,
    FUELS_WITH_COMMISSION_RECEIVED,
    STATUS_DATE,
    STATUS,
  ],
};

/** A typed field's start when it was sent as null (absent: ABSENT). */
export const NULL_VALUE = -2;
export const ABSENT = -1;

/** What the index holds: byte ranges into the body (start inclusive, end exclusive); -1 when absent. */
export interface DeliveryIndex {
  /** webhook.id, webhook.trigger, webhook.date: strings without escapes (the quotes excluded). */
  idStart: number;
  idEnd: number;
  triggerStart: number;
  triggerEnd: number;
  dateStart: number;
  dateEnd: number;
  /** query.api (a string, quotes excluded), when sent; whether it has an escape. */
  apiStart: number;
  apiEnd: number;
  apiEscaped: boolean;
  /** query.variables: an object's text (braces included), when sent and not null. */
  variablesStart: number;
  variablesEnd: number;
  /** Whether the variables' text has whitespace between tokens or a string with an escape. */
  variablesIrregular: boolean;
  /** The root field's value, an object (braces included). */
  rootStart: number;
  rootEnd: number;
  rootIrregular: boolean;
  /** The root record's `__typename`: a string without escapes, quotes excluded. */
  typenameStart: number;
  typenameEnd: number;
  /** The root record's `id`: a string without escapes (quotes excluded) or a number's text. */
  entityIdStart: number;
  entityIdEnd: number;
  entityIdIsString: boolean;
  /**
   * The record's typed fields (an EnergySwitch's, by slot): ABSENT, NULL_VALUE, or the range of a
   * string without escapes (quotes excluded), a number's text, or an object (braces included).
   */
  typedStart: Int32Array;
  typedEnd: Int32Array;
  /**
   * A typed field of another type than its slot's (one energySwitchSchema refuses, or reads from a string),
   * or a string with an escape: route() decides.
   */
  typedInvalid: boolean;
  /** Whether the commission object's text has whitespace between tokens or an escaped string. */
  commissionIrregular: boolean;
  /**
   * The record's leaves (flattenFields' paths), as runs of key ranges in `pathKeys` (start, end pairs):
   * path n has its `pathLengths[n]` keys starting at pair `pathOffsets[n]`.
   */
  paths: number;
  pathOffsets: Int32Array;
  pathLengths: Int32Array;
  pathKeys: Int32Array;
}

/** Thrown inside, caught at the top: the body is left to the full parse. Shared, so giving up allocates nothing. */
const GIVE_UP = Object.freeze({ notHandled: true });

// The scan in progress: module state, not closures per call (one body at a time, synchronously).
const EMPTY = Buffer.alloc(0);
let b: Buffer = EMPTY;
let i = 0;
let n = 0;
/**
 * A byte above 0x7f was seen (in a string: anywhere else it is not JSON): the body is then checked to be
 * UTF-8, which ASCII is.
 */
let highBytes = false;
/** Whitespace between tokens or escaped strings seen so far (a range is verbatim when this did not move). */
let irregular = 0;
/** Key ranges of the objects being scanned (a stack: each object compares its keys with its own). */
let keys = new Int32Array(256);
let keyTop = 0;
/**
 * The arrays and objects open at the scan's position: deeper than MAX_JSON_DEPTH, the scan gives up and
 * route() refuses the body (parseBody), at every depth alike.
 */
let depth = 0;
/** The record's path prefix being walked: key ranges. */
let prefix = new Int32Array(64);
let prefixDepth = 0;
/** What the paths of the record may still take (route()'s maxFieldPathBytes), in UTF-8 bytes. */
let pathBytesLeft = 0;

const index: DeliveryIndex = {
  idStart: -1,
  idEnd: -1,
  triggerStart: -1,
  triggerEnd: -1,
  dateStart: -1,
  dateEnd: -1,
  apiStart: -1,
  apiEnd: -1,
  apiEscaped: false,
  variablesStart: -1,
  variablesEnd: -1,
  variablesIrregular: false,
  rootStart: -1,
  rootEnd: -1,
  rootIrregular: false,
  typenameStart: -1,
  typenameEnd: -1,
  entityIdStart: -1,
  entityIdEnd: -1,
  entityIdIsString: false,
  typedStart: new Int32Array(SLOTS),
  typedEnd: new Int32Array(SLOTS),
  typedInvalid: false,
  commissionIrregular: false,
  paths: 0,
  pathOffsets: new Int32Array(64),
  pathLengths: new Int32Array(64),
  pathKeys: new Int32Array(256),
};

function reset(): void {
  index.idStart = index.idEnd = index.triggerStart = index.triggerEnd = -1;
  index.dateStart = index.dateEnd = index.apiStart = index.apiEnd = -1;
  index.variablesStart = index.variablesEnd = index.rootStart = index.rootEnd = -1;
  index.typenameStart = index.typenameEnd = index.entityIdStart = index.entityIdEnd = -1;
  index.variablesIrregular = index.rootIrregular = index.entityIdIsString = index.apiEscaped = false;
  index.paths = 0;
  index.typedStart.fill(ABSENT);
  index.typedInvalid = index.commissionIrregular = false;
  irregular = 0;
  keyTop = 0;
  prefixDepth = 0;
  depth = 0;
}

function skipWhitespace(): void {
  const bytes = b;
  let k = i;
  for (;;) {
    const c = bytes[k];
    if (c === 0x20 || c === 0x0a || c === 0x09 || c === 0x0d) k++;
    else break;
  }
  if (k !== i) {
    irregular++;
    i = k;
  }
}

const isDigit = (c: number | undefined) => c !== undefined && c >= ZERO && c <= NINE;
const isHex = (c: number | undefined) =>
  c !== undefined && ((c >= ZERO && c <= NINE) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66));
/** The characters after a backslash that JSON reads as an escape (besides `u` and four hex digits). */
const SIMPLE_ESCAPES = new Set([...'"\\/bfnrt'].map((c) => c.charCodeAt(0)));

/** At an opening quote: moves past the closing one. Returns whether the string has an escape. */
function scanString(): boolean {
  // Locals in the loop: the module's state is written back once.
  const bytes = b;
  const length = n;
  let k = i + 1;
  let escaped = false;
  let high = false;
  for (;;) {
    if (k >= length) throw GIVE_UP;
    const c = bytes[k]!;
    if (c === QUOTE) break;
    if (c === BACKSLASH) {
      escaped = true;
      const e = bytes[k + 1];
      if (e === 0x75) {
        if (!isHex(bytes[k + 2]) || !isHex(bytes[k + 3]) || !isHex(bytes[k + 4]) || !isHex(bytes[k + 5]))
          throw GIVE_UP;
        k += 6;
      } else if (e !== undefined && SIMPLE_ESCAPES.has(e)) k += 2;
      else throw GIVE_UP;
    } else {
      // A control character must be escaped (JSON.parse and lossless-json refuse it).
      if (c < 0x20) throw GIVE_UP;
      if (c >= 0x80) high = true;
      k++;
    }
  }
  i = k + 1;
  if (high) highBytes = true;
  if (escaped) irregular++;
  return escaped;
}

/** A number, by fast-json's grammar (the same JSON numbers lossless-json reads). */
function scanNumber(): void {
  if (b[i] === MINUS) i++;
  const first = b[i];
  if (first === ZERO) i++;
  else if (first !== undefined && first > ZERO && first <= NINE) {
    i++;
    while (isDigit(b[i])) i++;
  } else throw GIVE_UP;
  if (b[i] === DOT) {
    i++;
    if (!isDigit(b[i])) throw GIVE_UP;
    while (isDigit(b[i])) i++;
  }
  const e = b[i];
  if (e === 0x65 || e === 0x45) {
    i++;
    const sign = b[i];
    if (sign === MINUS || sign === PLUS) i++;
    if (!isDigit(b[i])) throw GIVE_UP;
    while (isDigit(b[i])) i++;
  }
}

function scanKeyword(a: number, c: number, d: number, e?: number): void {
  if (b[i + 1] !== a || b[i + 2] !== c || b[i + 3] !== d) throw GIVE_UP;
  if (e === undefined) i += 4;
  else if (b[i + 4] === e) i += 5;
  else throw GIVE_UP;
}

const sameBytes = (s1: number, e1: number, s2: number, e2: number): boolean => {
  if (e1 - s1 !== e2 - s2) return false;
  for (let k = 0; k < e1 - s1; k++) if (b[s1 + k] !== b[s2 + k]) return false;
  return true;
};

/**
 * At a key's opening quote: moves past it and its colon and returns its start (after the quote).
 * Keys the full parse orders or reads differently are left to it: with an escape, empty, starting with
 * a digit (an array index: objects list those first), with a dot (two leaves could share a path),
 * `__proto__`, or given twice in the object (`base` is the object's first key in `keys`).
 */
function scanKey(base: number): number {
  if (b[i] !== QUOTE) throw GIVE_UP;
  const start = i + 1;
  const bytes = b;
  let k = start;
  // One pass: the closing quote, and no escape, control character or dot before it.
  for (;;) {
    const c = bytes[k];
    if (c === QUOTE) break;
    if (c === undefined || c === BACKSLASH || c === DOT || c < 0x20) throw GIVE_UP;
    if (c >= 0x80) highBytes = true;
    k++;
  }
  const end = k;
  i = k + 1;
  if (end === start || isDigit(b[start])) throw GIVE_UP;
  if (end - start === 9 && b[start] === UNDERSCORE && b.toString('latin1', start, end) === '__proto__')
    throw GIVE_UP;
  for (let k = base; k < keyTop; k += 2) if (sameBytes(keys[k]!, keys[k + 1]!, start, end)) throw GIVE_UP;
  if (keyTop - base >= 2 * MAX_KEYS) throw GIVE_UP;
  if (keyTop + 2 > keys.length) {
    const grown = new Int32Array(keys.length * 2);
    grown.set(keys);
    keys = grown;
  }
  keys[keyTop++] = start;
  keys[keyTop++] = end;
  skipWhitespace();
  if (b[i] !== COLON) throw GIVE_UP;
  i++;
  skipWhitespace();
  return start;
}

/** After a member's value: true at the object's end (moved past it), false after a comma. */
function afterMember(): boolean {
  skipWhitespace();
  const c = b[i];
  if (c === COMMA) {
    i++;
    skipWhitespace();
    return false;
  }
  if (c === CLOSE_BRACE) {
    i++;
    depth--;
    return true;
  }
  throw GIVE_UP;
}

/** At `{`: moves into the object; true when it is empty (then past it). */
function enterObject(): boolean {
  if (++depth > MAX_JSON_DEPTH) throw GIVE_UP;
  i++;
  skipWhitespace();
  if (b[i] === CLOSE_BRACE) {
    i++;
    depth--;
    return true;
  }
  return false;
}

/** Any value (no whitespace around it). */
function scanValue(): void {
  const c = b[i];
  if (c === QUOTE) scanString();
  else if (c === OPEN_BRACE) scanObject();
  else if (c === OPEN_BRACKET) scanArray();
  else if (c === MINUS || isDigit(c)) scanNumber();
  else if (c === 0x74) scanKeyword(0x72, 0x75, 0x65);
  else if (c === 0x66) scanKeyword(0x61, 0x6c, 0x73, 0x65);
  else if (c === 0x6e) scanKeyword(0x75, 0x6c, 0x6c);
  else throw GIVE_UP;
}

function scanObject(): void {
  const base = keyTop;
  if (!enterObject()) {
    do {
      scanKey(base);
      scanValue();
    } while (!afterMember());
  }
  keyTop = base;
}

function scanArray(): void {
  if (++depth > MAX_JSON_DEPTH) throw GIVE_UP;
  i++;
  skipWhitespace();
  if (b[i] === CLOSE_BRACKET) {
    i++;
    depth--;
    return;
  }
  for (;;) {
    scanValue();
    skipWhitespace();
    const c = b[i];
    if (c === COMMA) {
      i++;
      skipWhitespace();
    } else if (c === CLOSE_BRACKET) {
      i++;
      depth--;
      return;
    } else throw GIVE_UP;
  }
}

/** A string value without escapes: its range without the quotes (a start of -1 gives up). */
function scanPlainString(): number {
  if (b[i] !== QUOTE) throw GIVE_UP;
  const start = i + 1;
  if (scanString()) throw GIVE_UP;
  return start;
}

const isKey = (start: number, word: string): boolean => {
  const end = keys[keyTop - 1]!;
  if (end - start !== word.length) return false;
  for (let k = 0; k < word.length; k++) if (b[start + k] !== word.charCodeAt(k)) return false;
  return true;
};

/** body.webhook: id, trigger and date must be strings without escapes. */
function scanWebhook(): void {
  if (b[i] !== OPEN_BRACE) throw GIVE_UP;
  const base = keyTop;
  if (!enterObject()) {
    do {
      const key = scanKey(base);
      if (isKey(key, 'id')) {
        index.idStart = scanPlainString();
        index.idEnd = i - 1;
      } else if (isKey(key, 'trigger')) {
        index.triggerStart = scanPlainString();
        index.triggerEnd = i - 1;
      } else if (isKey(key, 'date')) {
        index.dateStart = scanPlainString();
        index.dateEnd = i - 1;
      } else scanValue();
    } while (!afterMember());
  }
  keyTop = base;
  if (index.idStart < 0 || index.triggerStart < 0 || index.dateStart < 0) throw GIVE_UP;
}

/**
 * body.query, an object: api and query strings when sent, variables an object or null. (querySchema also
 * takes a null api or query: left to route().)
 */
function scanQuery(): void {
  if (b[i] === 0x6e) {
    scanKeyword(0x75, 0x6c, 0x6c);
    return;
  }
  if (b[i] !== OPEN_BRACE) throw GIVE_UP;
  const base = keyTop;
  if (!enterObject()) {
    do {
      const key = scanKey(base);
      if (isKey(key, 'api')) {
        if (b[i] !== QUOTE) throw GIVE_UP;
        const start = i + 1;
        const escaped = scanString();
        index.apiStart = start;
        index.apiEnd = i - 1;
        index.apiEscaped = escaped;
      } else if (isKey(key, 'query')) {
        if (b[i] !== QUOTE) throw GIVE_UP;
        scanString();
      } else if (isKey(key, 'variables')) {
        if (b[i] === 0x6e) scanKeyword(0x75, 0x6c, 0x6c);
        else {
          if (b[i] !== OPEN_BRACE) throw GIVE_UP;
          const before = irregular;
          index.variablesStart = i;
          scanObject();
          index.variablesEnd = i;
          index.variablesIrregular = irregular !== before;
        }
      } else scanValue();
    } while (!afterMember());
  }
  keyTop = base;
}

/** body.data: exactly one root field (besides `__` introspection fields), whose value is an object. */
function scanData(): void {
  if (b[i] !== OPEN_BRACE) throw GIVE_UP;
  const base = keyTop;
  if (!enterObject()) {
    do {
      const key = scanKey(base);
      if (b[key] === UNDERSCORE && b[key + 1] === UNDERSCORE) scanValue();
      else {
        if (index.rootStart >= 0 || b[i] !== OPEN_BRACE) throw GIVE_UP;
        const before = irregular;
        index.rootStart = i;
        scanRecord();
        index.rootEnd = i;
        index.rootIrregular = irregular !== before;
      }
    } while (!afterMember());
  }
  keyTop = base;
  if (index.rootStart < 0) throw GIVE_UP;
}

/** The root record: its `__typename` and `id`, its typed fields, and every leaf's path (flattenFields' order). */
function scanRecord(): void {
  const base = keyTop;
  if (!enterObject()) {
    do {
      const key = scanKey(base);
      const end = keys[keyTop - 1]!;
      if (isKey(key, '__typename')) {
        index.typenameStart = scanPlainString();
        index.typenameEnd = i - 1;
        continue;
      }
      if (isKey(key, 'id')) {
        const c = b[i];
        if (c === QUOTE) {
          index.entityIdStart = scanPlainString();
          index.entityIdEnd = i - 1;
          index.entityIdIsString = true;
        } else if (c === MINUS || isDigit(c)) {
          index.entityIdStart = i;
          scanNumber();
          index.entityIdEnd = i;
        } else throw GIVE_UP;
        addPath(key, end);
        continue;
      }
      const slot = rootSlot(key, end);
      if (b[i] === OPEN_BRACE) {
        const start = i;
        const before = irregular;
        if (slot >= 0 && SLOT_KINDS[slot] !== OBJECT) index.typedInvalid = true;
        pushPrefix(key, end);
        const walked = scanFields(slot >= 0 && SLOT_KINDS[slot] === OBJECT ? slot : -1);
        prefixDepth--;
        if (!walked) addPath(key, end);
        if (slot >= 0) {
          index.typedStart[slot] = start;
          index.typedEnd[slot] = i;
          if (slot === COMMISSION) index.commissionIrregular = irregular !== before;
        }
        continue;
      }
      if (slot >= 0) captureTyped(slot);
      else scanValue();
      addPath(key, end);
    } while (!afterMember());
  }
  keyTop = base;
}

/**
 * A nested object of the record: its leaves' paths under the prefix, and when it is one of the typed
 * objects (`parent`, else -1) its typed fields. Returns false when it has no key but `__typename` (then
 * it is a leaf itself, as flattenFields reads it).
 */
function scanFields(parent: number): boolean {
  const base = keyTop;
  let walked = false;
  if (!enterObject()) {
    do {
      const key = scanKey(base);
      const end = keys[keyTop - 1]!;
      if (isKey(key, '__typename')) {
        scanValue();
        continue;
      }
      walked = true;
      const slot = parent < 0 ? -1 : childSlot(parent, key, end);
      if (b[i] === OPEN_BRACE) {
        if (slot >= 0) index.typedInvalid = true;
        pushPrefix(key, end);
        const nested = scanFields(-1);
        prefixDepth--;
        if (!nested) addPath(key, end);
      } else {
        if (slot >= 0) captureTyped(slot);
        else scanValue();
        addPath(key, end);
      }
    } while (!afterMember());
  }
  keyTop = base;
  return walked;
}

/**
 * A typed field's value (not an object): null, or a string without escapes / a number as the slot
 * wants; anything else is left to route(): a value energySwitchSchema refuses, a string it decodes, or a
 * string it reads as a number (an amount or an integer sent as text).
 */
function captureTyped(slot: number): void {
  const c = b[i];
  if (c === 0x6e) {
    scanKeyword(0x75, 0x6c, 0x6c);
    index.typedStart[slot] = NULL_VALUE;
    return;
  }
  const kind = SLOT_KINDS[slot];
  const start = i;
  if ((kind === STRING || kind === TEXT) && c === QUOTE) {
    if (scanString()) index.typedInvalid = true;
    index.typedStart[slot] = start + 1;
    index.typedEnd[slot] = i - 1;
  } else if ((kind === NUMBER || kind === TEXT) && (c === MINUS || isDigit(c))) {
    scanNumber();
    index.typedStart[slot] = start;
    index.typedEnd[slot] = i;
  } else {
    index.typedInvalid = true;
    scanValue();
  }
}

/** A root key's typed slot (an EnergySwitch field of the contract), else -1: by length first, cheaply. */
function rootSlot(start: number, end: number): number {
  switch (end - start) {
    case 4:
      return isKey(start, 'date') ? DATE : isKey(start, 'user') ? USER : -1;
    case 7:
      return isKey(start, 'savings') ? SAVINGS : -1;
    case 8:
      return isKey(start, 'postcode')
        ? POSTCODE
        : isKey(start, 'provider')
          ? PROVIDER
          : isKey(start, 'fuelType')
            ? FUEL_TYPE
            : -1;
    case 10:
      return isKey(start, 'tariffName') ? TARIFF_NAME : isKey(start, 'commission') ? COMMISSION : -1;
    case 13:
      return isKey(start, 'fuelsSwitched') ? FUELS_SWITCHED : -1;
    case 14:
      return isKey(start, 'projectedSpend') ? PROJECTED_SPEND : -1;
    case 21:
      return isKey(start, 'userSwitchReferenceId') ? USER_SWITCH_REFERENCE_ID : -1;
    default:
      return -1;
  }
}

/** A typed object's field slot, else -1. */
function childSlot(parent: number, start: number, end: number): number {
  const names = CHILD_NAMES[parent]!;
  for (let k = 0; k < names.length; k++)
    if (names[k]!.length === end - start && isKey(start, names[k]!)) return CHILD_SLOTS[parent]![k]!;
  return -1;
}

function pushPrefix(start: number, end: number): void {
  if (2 * prefixDepth + 2 > prefix.length) {
    const grown = new Int32Array(prefix.length * 2);
    grown.set(prefix);
    prefix = grown;
  }
  prefix[2 * prefixDepth] = start;
  prefix[2 * prefixDepth + 1] = end;
  prefixDepth++;
}

/** A leaf's path: the prefix's keys, then this one; its bytes counted against pathBytesLeft. */
function addPath(start: number, end: number): void {
  const p = index.paths;
  if (p >= index.pathOffsets.length) {
    index.pathOffsets = grow(index.pathOffsets, 0);
    index.pathLengths = grow(index.pathLengths, 0);
  }
  let offset = p === 0 ? 0 : index.pathOffsets[p - 1]! + index.pathLengths[p - 1]!;
  const need = 2 * (offset + prefixDepth + 1);
  if (need > index.pathKeys.length) index.pathKeys = grow(index.pathKeys, need);
  index.pathOffsets[p] = offset;
  index.pathLengths[p] = prefixDepth + 1;
  const pathKeys = index.pathKeys;
  let bytes = end - start;
  for (let d = 0; d < prefixDepth; d++) {
    pathKeys[2 * offset] = prefix[2 * d]!;
    pathKeys[2 * offset + 1] = prefix[2 * d + 1]!;
    bytes += prefix[2 * d + 1]! - prefix[2 * d]! + 1;
    offset++;
  }
  pathKeys[2 * offset] = start;
  pathKeys[2 * offset + 1] = end;
  index.paths = p + 1;
  // Paths repeat every key above their leaf: over the bound, route() dead-letters the record.
  pathBytesLeft -= bytes;
  if (pathBytesLeft < 0) throw GIVE_UP;
}

function grow(array: Int32Array, atLeast: number): Int32Array {
  const grown = new Int32Array(Math.max(array.length * 2, atLeast));
  grown.set(array);
  return grown;
}

/** body.errors: absent, null or an empty array (anything else is GraphQL errors: route() words them). */
function scanErrors(): void {
  if (b[i] === 0x6e) {
    scanKeyword(0x75, 0x6c, 0x6c);
    return;
  }
  if (b[i] !== OPEN_BRACKET) throw GIVE_UP;
  i++;
  skipWhitespace();
  if (b[i] !== CLOSE_BRACKET) throw GIVE_UP;
  i++;
}

/**
 * Indexes a body of the common shape: UTF-8 without a BOM, JSON that lossless-json reads to the same
 * values (no duplicate key, no `__proto__`), `webhook` with id, trigger and date strings, `query`
 * (optional) as querySchema accepts it but for a null api or query, no GraphQL errors, and `data` with
 * one root field whose value is a record object, nested no deeper than MAX_JSON_DEPTH. Returns the index
 * (valid until the next call), or undefined: the full parse decides.
 */
export function scanDelivery(
  body: Buffer,
  maxPathBytes = Number.POSITIVE_INFINITY,
): DeliveryIndex | undefined {
  b = body;
  pathBytesLeft = maxPathBytes;
  highBytes = false;
  i = 0;
  n = body.length;
  reset();
  try {
    skipWhitespace();
    if (b[i] !== OPEN_BRACE) return undefined;
    let webhook = false;
    let data = false;
    const base = keyTop;
    if (!enterObject()) {
      do {
        const key = scanKey(base);
        if (isKey(key, 'webhook')) {
          scanWebhook();
          webhook = true;
        } else if (isKey(key, 'query')) scanQuery();
        else if (isKey(key, 'data')) {
          scanData();
          data = true;
        } else if (isKey(key, 'errors')) scanErrors();
        else scanValue();
      } while (!afterMember());
    }
    skipWhitespace();
    if (i !== n || !webhook || !data || index.typenameStart < 0) return undefined;
    // Not UTF-8 (JSON's bytes must be: RFC 8259 §8.1): parseBody's to refuse.
    if (highBytes && !isUtf8(body)) return undefined;
    return index;
  } catch {
    // GIVE_UP (nesting deeper than MAX_JSON_DEPTH included), or anything else: the full parse decides.
    return undefined;
  } finally {
    // Not kept alive by this module until the next scan.
    b = EMPTY;
  }
}
