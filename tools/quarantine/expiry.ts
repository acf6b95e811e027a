// Which quarantined requests `quarantine promote` holds back: those received so long ago that another
// attempt of their webhook id, accepted and routed before, may have left the router's memory.
import { EXPIRY_MARGIN_MS, isExpired } from '../redrive/select.js';

/** What the router is configured with (the same variables, read from the same configuration). */
export interface RouterMemory {
  /** DEDUPE_WINDOW: an id is remembered this long from the record time of its last decision. */
  dedupeWindowMs: number;
  /** WEBHOOK_MAX_AGE: a delivery received longer than this after its webhook.date is not routed. */
  maxAgeMs: number;
  /** WEBHOOK_MAX_AHEAD: nor one whose webhook.date is this far after its receipt. */
  maxAheadMs: number;
}

/**
 * How long after its receipt (Q) a quarantined request can still be promoted, at P, without a second
 * routing of its id. The router routes the promoted record only when Q − webhook.date ≤ WEBHOOK_MAX_AGE,
 * and routed another attempt of the id only when that attempt's record time T0 ≥ webhook.date −
 * WEBHOOK_MAX_AHEAD; so T0 ≥ Q − WEBHOOK_MAX_AGE − WEBHOOK_MAX_AHEAD, and the id is still known at P
 * (P − T0 ≤ DEDUPE_WINDOW) whenever P − Q ≤ DEDUPE_WINDOW − WEBHOOK_MAX_AGE − WEBHOOK_MAX_AHEAD. The
 * margin covers the time until the router reads the record and the clocks, as redrive's does. The config
 * only holds DEDUPE_WINDOW ≥ WEBHOOK_MAX_AGE + WEBHOOK_MAX_AHEAD, so this can be ≤ 0: nothing is safe.
 */
export function promotableForMs(memory: RouterMemory, marginMs = EXPIRY_MARGIN_MS): number {
  return memory.dedupeWindowMs - memory.maxAgeMs - memory.maxAheadMs - marginMs;
}

/** Whether a request received at `receivedAt` is past `promotableForMs` at `now` (not promoted by default). */
export function isPromoteExpired(
  receivedAt: number,
  now: number,
  memory: RouterMemory,
  marginMs = EXPIRY_MARGIN_MS,
): boolean {
  // redrive's rule with the part of the window a request's own age checks cannot vouch for.
  return isExpired(receivedAt, now, memory.dedupeWindowMs - memory.maxAgeMs - memory.maxAheadMs, marginMs);
}
