// The webhook body as the platform writes it: the recommended query texts, and JSON text whose numbers
// keep the digits they were given (money as 199.90, never 199.9).
import { isLosslessNumber, LosslessNumber, parse, stringify } from 'lossless-json';

export { isLosslessNumber };

import type { Random } from './prng.js';

/** The GraphQL endpoint the platform names in `query.api` (§9: a `v1` segment before `graphql`). */
export const DEFAULT_API = 'https://api.platform.example/v1/graphql';

/** A JSON value as written here: numbers that must keep their text are LosslessNumbers. */
export type Json = string | number | boolean | null | LosslessNumber | Json[] | { [key: string]: Json };

/** A decimal written exactly as given, e.g. `decimal('199.90')`. */
export function decimal(text: string): LosslessNumber {
  return new LosslessNumber(text);
}

/** Pence (or cents) as a two-decimal amount: 19990 → 199.90. */
export function money(minorUnits: number): LosslessNumber {
  const sign = minorUnits < 0 ? '-' : '';
  const abs = Math.abs(minorUnits);
  return decimal(`${sign}${Math.trunc(abs / 100)}.${String(abs % 100).padStart(2, '0')}`);
}

/**
 * The recommended query for an entity (§4.3): one `$id: ID!` variable, `__typename`, the
 * OperationFailure branch with `description(locale: en_GB)`, then the record's selection.
 */
export function recommendedQuery(entity: string, selection: string): string {
  return `query ${entity}($id: ID!) { get${entity}(id: $id) { __typename ... on OperationFailure { description(locale: en_GB) } ... on ${entity} { ${selection} } } }`;
}

export interface WebhookMeta {
  id: string;
  trigger: string;
  date: string;
}

// A type, not an interface: it must stay assignable to Json.
export type QueryMeta = {
  api: string;
  query: string;
  variables: Record<string, Json>;
};

/** A body before it is written: what the platform sends, and what an invalid delivery changes. */
export interface BodyParts {
  webhook: WebhookMeta;
  query: QueryMeta;
  data: Record<string, Json> | null;
  /** GraphQL errors, when the query failed. */
  errors?: Json[];
}

/** The body text, compact, in the platform's order: `webhook`, `query`, `data` (then `errors`, if any). */
export function writeBody(
  webhook: WebhookMeta,
  query: QueryMeta,
  data: Record<string, Json> | null,
  errors?: Json[],
): string {
  return writeJson({ webhook: { ...webhook }, query, data, ...(errors === undefined ? {} : { errors }) });
}

/** Compact JSON text; LosslessNumbers are written with their own digits. */
export function writeJson(value: Json): string {
  return stringify(value) as string;
}

/**
 * The same body written differently, as a retry may be (§2.1: property order and whitespace are not
 * guaranteed): keys shuffled at every level and/or indented; every value, numbers' digits included,
 * unchanged. Always differs from the input text.
 */
export function reserialize(body: string, random: Random): string {
  const value = parse(body) as Json;
  for (let attempt = 0; attempt < 4; attempt++) {
    const indent = random.pick([0, 1, 2, 4]);
    const text = stringify(
      shuffleKeys(value, random),
      undefined,
      indent === 0 ? undefined : indent,
    ) as string;
    if (text !== body) return text;
  }
  return stringify(value, undefined, 2) as string;
}

function shuffleKeys(value: Json, random: Random): Json {
  if (Array.isArray(value)) return value.map((item) => shuffleKeys(item, random));
  if (value === null || typeof value !== 'object' || isLosslessNumber(value)) return value;
  const entries = Object.entries(value as Record<string, Json>);
  for (let i = entries.length - 1; i > 0; i--) {
    const j = random.int(0, i);
    [entries[i], entries[j]] = [entries[j]!, entries[i]!];
  }
  return Object.fromEntries(entries.map(([key, item]) => [key, shuffleKeys(item, random)]));
}

/** An instant as the platform writes webhook dates: ISO 8601 UTC with milliseconds. */
export function webhookDate(ms: number): string {
  return new Date(ms).toISOString();
}

/** An instant as the platform writes record dates: ISO 8601 UTC to the second. */
export function recordDate(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}
