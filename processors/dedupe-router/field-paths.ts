// The fields a delivery carried, as dotted paths to their leaves (`savings.amount`), and the
// values at those paths: the unit a table merges by.
import { isJsonObject, type JsonObject, type JsonValue } from './parse-body.js';

/** GraphQL's type discriminator: it says what the record is, not a fact about the entity. */
const TYPENAME = '__typename';

/**
 * Every leaf of a record with its dotted path, in the order sent. Nested objects are walked; a
 * scalar, null, an array or an empty object is a leaf. `__typename` is left out at every depth.
 */
export function flattenFields(record: JsonObject): Map<string, JsonValue> {
  const out = new Map<string, JsonValue>();
  walk(record, '', out);
  return out;
}

/** The dotted paths of flattenFields, in order: an entity event's `fields`. */
export function fieldPaths(record: JsonObject): string[] {
  return [...flattenFields(record).keys()];
}

/**
 * Whether the dotted paths of flattenFields, counted in UTF-16 code units (never more than their UTF-8
 * bytes), total more than `limit`: found without building them, and stopping as soon as they do. A
 * record's paths repeat every key above each leaf, so a deeply nested record with long keys has paths
 * hundreds of times the size of its body (an 804 KB body, 161 MB of paths).
 */
export function fieldPathsExceed(record: JsonObject, limit: number): boolean {
  return pathsLength(record, 0, limit) > limit;
}

/** The paths' total under a prefix of `prefixLength` units, or more than `left` as soon as it is. */
function pathsLength(object: JsonObject, prefixLength: number, left: number): number {
  let total = 0;
  for (const [key, value] of Object.entries(object)) {
    if (key === TYPENAME) continue;
    const length = prefixLength === 0 ? key.length : prefixLength + 1 + key.length;
    total +=
      isJsonObject(value) && Object.keys(value).some((k) => k !== TYPENAME)
        ? pathsLength(value, length, left - total)
        : length;
    if (total > left) return total;
  }
  return total;
}

function walk(object: JsonObject, prefix: string, out: Map<string, JsonValue>): void {
  for (const [key, value] of Object.entries(object)) {
    if (key === TYPENAME) continue;
    const path = prefix === '' ? key : `${prefix}.${key}`;
    if (isJsonObject(value) && Object.keys(value).some((k) => k !== TYPENAME)) {
      walk(value, path, out);
    } else {
      out.set(path, value);
    }
  }
}
