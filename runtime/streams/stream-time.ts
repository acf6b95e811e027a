// Stream time: the largest record timestamp seen, which drives punctuations (the dedupe window's
// expiry). Record timestamps are the writer's clock (ingest's, with CreateTime): a writer whose clock
// runs ahead must not drag stream time into the future with one record, or every id younger than that
// future minus the window would be forgotten at once and retries would pass as new webhooks.

/** How far ahead of this process's clock a record's timestamp may move stream time. */
export const MAX_RECORD_LEAD_MS = 60_000;

/**
 * Stream time after a record: the record's timestamp if it is later, but never past `now` plus
 * `maxLeadMs`. History (a replay, a restore) is always behind the clock and is not affected.
 */
export function advanceStreamTime(
  streamTime: number,
  recordTimestamp: number,
  now: number,
  maxLeadMs: number = MAX_RECORD_LEAD_MS,
): number {
  const bounded = Math.min(recordTimestamp, now + maxLeadMs);
  return bounded > streamTime ? bounded : streamTime;
}

/** How far a record's timestamp is ahead of the clock beyond the allowed lead, in ms (0: not at all). */
export function recordLeadBeyondAllowed(
  recordTimestamp: number,
  now: number,
  maxLeadMs: number = MAX_RECORD_LEAD_MS,
): number {
  return Math.max(0, recordTimestamp - now - maxLeadMs);
}
