// Whether a delivery's event needs the full record fetched, and from where: pure, so live, tests and a
// replay decide alike. The endpoint comes from the delivery (`query.api`) and is used only when its
// origin is on the allow-list: a body never makes the stage send a request anywhere else.
import type { EnergySwitchEvent } from '../dedupe-router/entity-event.js';
import { missingPaths } from './selection.js';

export interface FetchPolicy {
  /** Triggers to enrich; empty: every EnergySwitch trigger that is not a deletion. */
  readonly triggers: ReadonlySet<string>;
  /** Leaf paths of the full query's record. */
  readonly fullPaths: readonly string[];
  /** Origins (`https://api.platform.example`) a `query.api` may name. */
  readonly allowedOrigins: ReadonlySet<string>;
}

export type SkipReason =
  | 'fetched'
  | 'deletion'
  | 'trigger'
  | 'complete'
  | 'no-endpoint'
  | 'endpoint-not-allowed';

export type FetchDecision =
  | { readonly fetch: string; readonly missing: readonly string[] }
  | { readonly skip: SkipReason };

export type DecisionInput = Pick<EnergySwitchEvent, 'trigger' | 'deleted' | 'fields' | 'queryApi'> & {
  /** Absent on events written before the field existed: a delivery. */
  readonly origin?: string;
};

export function fetchDecision(event: DecisionInput, policy: FetchPolicy): FetchDecision {
  // Its own answers are complete by definition, whatever the endpoint left out: never fetched again.
  if (event.origin === 'fetched') return { skip: 'fetched' };
  if (event.deleted) return { skip: 'deletion' };
  if (policy.triggers.size > 0 && !policy.triggers.has(event.trigger)) return { skip: 'trigger' };
  const missing = missingPaths(event.fields, policy.fullPaths);
  if (missing.length === 0) return { skip: 'complete' };
  if (event.queryApi === null || event.queryApi === undefined || event.queryApi === '')
    return { skip: 'no-endpoint' };
  const origin = originOf(event.queryApi);
  if (origin === undefined || !policy.allowedOrigins.has(origin)) return { skip: 'endpoint-not-allowed' };
  return { fetch: event.queryApi, missing };
}

/** `scheme://host[:port]` of an http(s) URL without credentials; undefined for anything else. */
export function originOf(url: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') return undefined;
  if (parsed.username !== '' || parsed.password !== '') return undefined;
  return parsed.origin;
}
