// Which dead letters a redrive run sends again: those its filter chooses, less those there is nothing to
// send for (no envelope; an enrich fetch's answer), those the router may have forgotten, and later
// letters of an id already sent.
import { UNDECODABLE_REASON } from '../../processors/dedupe-router/poison.js';

export interface RedriveFilter {
  /** Only these reasons (any when empty or absent). */
  reasons?: readonly string[];
  /** The dead letter's record time (the raw record's), epoch ms: from inclusive, to exclusive. */
  fromTime?: number;
  toTime?: number;
}

/**
 * How far inside DEDUPE_WINDOW a dead letter must be to be sent by default. It covers the time between
 * choosing a letter and the router reading the redriven record (a chunk waiting to be written, the clocks
 * of this machine and the producer's), so the router still knows the id when it gets there.
 */
export const EXPIRY_MARGIN_MS = 3_600_000;

/** Whether a dead letter is chosen by the filter. */
export function matches(filter: RedriveFilter, reason: string, timestamp: number): boolean {
  if (filter.reasons !== undefined && filter.reasons.length > 0 && !filter.reasons.includes(reason))
    return false;
  if (filter.fromTime !== undefined && timestamp < filter.fromTime) return false;
  if (filter.toTime !== undefined && timestamp >= filter.toTime) return false;
  return true;
}

/**
 * Whether a dead letter recorded at `timestamp` may name an id the router has forgotten. The router
 * remembers an id's last decision for DEDUPE_WINDOW from that decision's record time. For a letter
 * recorded within the window (less the margin), both the dead-lettering and any earlier redrive's decision
 * (later than the letter) outlive the record sent now: the router processes it once per run, or drops it
 * as a duplicate when an earlier redrive routed it. An older letter's id may be forgotten: if a redrive
 * more than the window ago routed it, sending it again routes it a second time.
 */
export function isExpired(
  timestamp: number,
  now: number,
  dedupeWindowMs: number,
  marginMs = EXPIRY_MARGIN_MS,
): boolean {
  return timestamp < now - (dedupeWindowMs - marginMs);
}

export type Verdict = 'send' | 'filtered' | 'undecodable' | 'fetch-answer' | 'expired' | 'repeat';

/** The stage of the enrich stage's dead letters: an answer of the platform's API, not a delivery. */
export const FETCH_STAGE = 'enrich.fetch';

export interface SelectionCounts {
  /** Dead letters read from webhooks.dlq. */
  read: number;
  /** Matching the filter, by reason (each is then sent, or skipped as undecodable, expired or a repeat). */
  selected: Map<string, number>;
  skippedByFilter: number;
  /** Dead letters of records that were not raw envelopes: there is no envelope to send again. */
  skippedUndecodable: number;
  /**
   * The enrich stage's dead letters (stage enrich.fetch): they hold an answer of the platform's API under
   * `<id>#fetched`, never signed nor delivered, so they do not go to webhooks.raw. The delivery they
   * were to enrich was routed (its thin event stands); the stage fetches again for its next delivery.
   */
  skippedFetchAnswers: number;
  /** Recorded longer ago than DEDUPE_WINDOW less the margin, and not sent without --include-expired. */
  skippedExpired: number;
  /** Later dead letters of an id already chosen in this run (its first one is sent once). */
  repeats: number;
}

export interface SelectionRule {
  filter: RedriveFilter;
  /** DEDUPE_WINDOW, as the router is configured. */
  dedupeWindowMs: number;
  /** The operator says no earlier redrive sent the expired letters: they are sent too. */
  includeExpired: boolean;
  /** Read for each letter: a long run judges each by the time it is sent, not by its start. */
  now?: () => number;
  marginMs?: number;
}

/** Judges the dead letters of one run in the order they are read; keeps the ids sent (one per run). */
export class Selection {
  readonly counts: SelectionCounts = {
    read: 0,
    selected: new Map(),
    skippedByFilter: 0,
    skippedUndecodable: 0,
    skippedFetchAnswers: 0,
    skippedExpired: 0,
    repeats: 0,
  };
  readonly #seen = new Set<string>();
  readonly #now: () => number;

  constructor(private readonly rule: SelectionRule) {
    this.#now = rule.now ?? Date.now;
  }

  choose(
    letter: { reason: string; source: string; webhookId: string; stage?: string },
    timestamp: number,
  ): Verdict {
    const counts = this.counts;
    counts.read++;
    if (!matches(this.rule.filter, letter.reason, timestamp)) {
      counts.skippedByFilter++;
      return 'filtered';
    }
    counts.selected.set(letter.reason, (counts.selected.get(letter.reason) ?? 0) + 1);
    if (letter.reason === UNDECODABLE_REASON) {
      counts.skippedUndecodable++;
      return 'undecodable';
    }
    if (letter.stage === FETCH_STAGE) {
      counts.skippedFetchAnswers++;
      return 'fetch-answer';
    }
    // Not remembered as seen: a later letter of the same id, within the window, is still sent.
    if (
      !this.rule.includeExpired &&
      isExpired(timestamp, this.#now(), this.rule.dedupeWindowMs, this.rule.marginMs)
    ) {
      counts.skippedExpired++;
      return 'expired';
    }
    const id = `${letter.source}/${letter.webhookId}`;
    if (this.#seen.has(id)) {
      counts.repeats++;
      return 'repeat';
    }
    this.#seen.add(id);
    return 'send';
  }
}
