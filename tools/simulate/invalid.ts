// Deliveries the router dead-letters (`--invalid-rate`), each for a reason a real platform or a real
// operator's query gives it: authentic and signed, so ingest stores them (200), but not the contract.
import type { DlqReason } from '../../processors/dedupe-router/dead-letter.js';
import type { BodyParts, Json } from './body.js';
import { isLosslessNumber } from './body.js';

/** The reasons simulated invalid deliveries are dead-lettered for, in the order a run cycles through them. */
export const INVALID_REASONS = [
  'record-invalid',
  'trigger-unrecognized',
  'webhook-date-invalid',
  'typename-missing',
  'graphql-errors',
] as const satisfies readonly DlqReason[];

export type InvalidReason = (typeof INVALID_REASONS)[number];

export function isInvalidReason(value: string): value is InvalidReason {
  return (INVALID_REASONS as readonly string[]).includes(value);
}

export interface InvalidKind {
  /**
   * What the body is made from: the delivery the platform would have sent for any trigger, the Full
   * query's answer about an energy switch, or nothing (the kind writes a body about no entity).
   */
  base: 'any' | 'energy-switch-full' | 'none';
  /** What went wrong, for people (`simulate --help`, the README). */
  story: string;
  /** Turns the contract's body into the invalid one. */
  apply(parts: BodyParts): BodyParts;
}

export const INVALID_KINDS: Record<InvalidReason, InvalidKind> = {
  'record-invalid': {
    base: 'energy-switch-full',
    // A server that formats money for people; the contract says a decimal number. (A plain decimal
    // string, "210.10", is the same value as the number and routes.)
    story: 'money amounts formatted for display ("£210.10")',
    apply: (parts) => ({ ...parts, data: mapJson(parts.data, amountsForDisplay) as BodyParts['data'] }),
  },
  'trigger-unrecognized': {
    base: 'none',
    story: 'a Ping test delivery (no entity and action)',
    apply: (parts) => ({
      webhook: { ...parts.webhook, trigger: 'Ping' },
      query: { api: parts.query.api, query: 'query Ping { __typename }', variables: {} },
      data: { __typename: 'Query' },
    }),
  },
  'webhook-date-invalid': {
    base: 'any',
    // ISO 8601 allows a local time; the router will not guess its zone.
    story: 'webhook.date without a time zone',
    apply: (parts) => ({
      ...parts,
      webhook: { ...parts.webhook, date: parts.webhook.date.replace(/Z$/, '') },
    }),
  },
  'typename-missing': {
    base: 'any',
    story: 'a query configured without __typename',
    apply: (parts) => ({
      ...parts,
      query: { ...parts.query, query: parts.query.query.replace('__typename ', '') },
      data: mapRoot(parts.data, (root) => {
        const { __typename: _dropped, ...rest } = root;
        return rest;
      }),
    }),
  },
  'graphql-errors': {
    base: 'any',
    story: 'the query failed (GraphQL errors, a null answer)',
    apply: (parts) => {
      const rootField = Object.keys(parts.data ?? {})[0] ?? 'query';
      return {
        ...parts,
        data: { [rootField]: null },
        errors: [
          {
            message: 'Internal server error',
            locations: [{ line: 1, column: parts.query.query.indexOf(rootField) + 1 }],
            path: [rootField],
            extensions: { code: 'INTERNAL_SERVER_ERROR' },
          },
        ],
      };
    },
  },
};

/** The root field's value replaced, when it is an object. */
function mapRoot(
  data: BodyParts['data'],
  replace: (root: { [key: string]: Json }) => Json,
): BodyParts['data'] {
  if (data === null) return null;
  return Object.fromEntries(
    Object.entries(data).map(([field, root]) => [field, isObject(root) ? replace(root) : root]),
  );
}

function amountsForDisplay(key: string, value: Json): Json {
  return key === 'amount' && isLosslessNumber(value) ? `£${value.value}` : value;
}

/** A copy of a JSON value with `map(key, value)` applied to every property, depth first. */
function mapJson(value: Json, map: (key: string, value: Json) => Json): Json {
  if (Array.isArray(value)) return value.map((item) => mapJson(item, map));
  if (!isObject(value)) return value;
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, map(key, mapJson(item, map))]));
}

function isObject(value: Json): value is { [key: string]: Json } {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !isLosslessNumber(value);
}
