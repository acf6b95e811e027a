// `hookledger quarantine list`: what the quarantine holds, one line per request, and whether it was promoted.
import type { KafkaSettings } from '../../runtime/kafka/rdkafka.js';
import type { Serde } from '../../schemas/serde.js';
import { type PromotionMark, promotionKey, readHeld, readPromotions } from './held.js';

export interface ListFilter {
  source?: string;
  reason?: string;
}

/** One quarantined request as listed: never its body, never a key (key ids only). */
export interface ListedRequest {
  receivedAt: number;
  source: string;
  webhookId: string;
  reason: string;
  triedKeyIds: readonly string[];
  ingestId: string;
  /** The run that promoted this request's webhook id, if one did. */
  promotedBy: string | undefined;
}

export async function listQuarantine({
  settings,
  serde,
  prefix,
  filter,
}: {
  settings: KafkaSettings;
  serde: Pick<Serde, 'decode'>;
  prefix: string;
  filter: ListFilter;
}): Promise<ListedRequest[]> {
  const marks: Map<string, PromotionMark> = await readPromotions(settings, prefix);
  const listed: ListedRequest[] = [];
  await readHeld(settings, serde, prefix, (held) => {
    if (filter.source !== undefined && held.source !== filter.source) return;
    if (filter.reason !== undefined && held.reason !== filter.reason) return;
    listed.push({
      receivedAt: held.receivedAt,
      source: held.source,
      webhookId: held.webhookId,
      reason: held.reason,
      triedKeyIds: held.triedKeyIds,
      ingestId: held.ingestId,
      promotedBy: marks.get(promotionKey(held.source, held.webhookId))?.run,
    });
  });
  return listed.sort((a, b) => a.receivedAt - b.receivedAt);
}

/** The table the command prints: oldest first, then a count. */
export function formatListing(listed: readonly ListedRequest[]): string {
  const rows = listed.map((r) => [
    new Date(r.receivedAt).toISOString(),
    r.source,
    r.webhookId,
    r.reason,
    r.triedKeyIds.length === 0 ? '-' : r.triedKeyIds.join(','),
    r.promotedBy === undefined ? 'held' : `promoted ${r.promotedBy}`,
  ]);
  const header = ['received', 'source', 'webhook id', 'reason', 'keys tried', 'status'];
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]) =>
    cells.map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ');
  const promoted = listed.filter((r) => r.promotedBy !== undefined).length;
  const summary = `${listed.length} quarantined request(s): ${listed.length - promoted} held, ${promoted} promoted`;
  return rows.length === 0 ? summary : [line(header), ...rows.map(line), summary].join('\n');
}

/** `quarantine list --json`: one object per request, times as ISO 8601, `promotedBy` null while held. */
export function listingJson(listed: readonly ListedRequest[]): string {
  return JSON.stringify(
    listed.map((r) => ({
      receivedAt: new Date(r.receivedAt).toISOString(),
      source: r.source,
      webhookId: r.webhookId,
      reason: r.reason,
      triedKeyIds: r.triedKeyIds,
      ingestId: r.ingestId,
      promotedBy: r.promotedBy ?? null,
    })),
  );
}
