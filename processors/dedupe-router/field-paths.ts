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
