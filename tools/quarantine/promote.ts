// `hookledger quarantine promote`: re-verifies a source's quarantined requests against the keys
// configured now and appends the authentic ones to webhooks.raw, as ingest would have stored them.
//
// Each webhook id is promoted once, across runs and crashes: its raw record and a promotion mark
// (webhooks.quarantine-promotions) are written in one Kafka transaction, and a run starts by reading
// the marks. The transactional id is per source, so a run fences an earlier one still writing (its
// open transaction is aborted) before it reads the marks. A request received too long ago is held back
// unless the operator includes it: another attempt of its id may have been routed and forgotten since.
import type { Source } from '../../ingest/sources.js';
import { envelopeHeaders } from '../../ingest/webhooks/envelope.js';
import { verifySignature } from '../../ingest/webhooks/signature.js';
import { formatDuration } from '../../runtime/duration.js';
import type { KafkaSettings } from '../../runtime/kafka/rdkafka.js';
import { resourceId } from '../../runtime/kafka/resource-ids.js';
import { EosProducer } from '../../runtime/streams/eos-producer.js';
import { ownSchemaId } from '../../schemas/own-schema-id.js';
import type { QuarantinedRequest } from '../../schemas/quarantined-request.js';
import type { RawEnvelope } from '../../schemas/raw-envelope.js';
import type { Serde } from '../../schemas/serde.js';
import { topicNames } from '../../schemas/topics.js';
import { newRunId } from '../redrive/redrive.js';
import { EXPIRY_MARGIN_MS } from '../redrive/select.js';
import { isPromoteExpired, promotableForMs, type RouterMemory } from './expiry.js';
import { encodeMark, type PromotionMark, promotionKey, readHeld, readPromotions } from './held.js';

/** Marks a raw record a promotion appended; its value names the run. The router reads it as any delivery. */
export const PROMOTE_HEADER = 'hookledger-promote';

/** One per source: a second promote of the same source fences the first (its marks stay consistent). */
export function promoteTransactionalId(prefix: string, source: string): string {
  return resourceId(prefix, `promote-${source}`);
}

/** A transaction is committed at least this often, far under the transaction timeout. */
const MAX_TRANSACTION_MS = 1_000;
const COMMIT_TIMEOUT_MS = 30_000;

/** The raw envelope ingest would have written had the key been configured (same ingestId: the same request). */
export function promotedEnvelope(held: QuarantinedRequest, keyId: string): RawEnvelope {
  return {
    webhookId: held.webhookId,
    source: held.source,
    trigger: held.trigger,
    webhookDate: held.webhookDate,
    receivedAt: held.receivedAt,
    body: held.body,
    // x-signature stays in the quarantine: a reader of webhooks.raw must not be able to replay the delivery.
    headers: envelopeHeaders(held.headers),
    query: held.query,
    verifiedKeyId: keyId,
    ingestId: held.ingestId,
  };
}

export interface PromoteOptions {
  settings: KafkaSettings;
  serde: Serde;
  prefix: string;
  /** The source as configured now: its keys are the ones tried. */
  source: Source;
  /** PROCESSOR_TRANSACTION_TIMEOUT_MS: how long a crashed run can hold read_committed readers back. */
  transactionTimeoutMs: number;
  /** The raw topic's largest record (its max.message.bytes). */
  maxMessageBytes: number;
  /** DEDUPE_WINDOW, WEBHOOK_MAX_AGE, WEBHOOK_MAX_AHEAD as the router has them: older requests are held back. */
  memory: RouterMemory;
  /** Promote requests past promotableForMs too: the operator says no other attempt of their ids was accepted. */
  includeExpired?: boolean;
  dryRun?: boolean;
  runId?: string;
  /** Records per transaction: a crash redoes at most this many, and a transaction stays short. */
  recordsPerTransaction?: number;
}

export interface PromoteResult {
  runId: string;
  source: string;
  dryRun: boolean;
  /** Quarantined requests of the source. */
  read: number;
  /** Appended to webhooks.raw (or that would be), by the key that verifies them now. */
  promoted: Map<string, number>;
  /** Authentic, but their webhook id was promoted by an earlier run. */
  alreadyPromoted: number;
  /** Authentic retries of a webhook id promoted earlier in this run. */
  repeats: number;
  /** Authentic, but received longer than promotableForMs ago: not promoted without includeExpired. */
  expired: number;
  memory: RouterMemory;
  includeExpired: boolean;
  /** Still not verified by any key configured now, by reason: they stay in the quarantine. */
  refused: Map<string, number>;
}

const count = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1);

export async function promote({
  settings,
  serde,
  prefix,
  source,
  transactionTimeoutMs,
  maxMessageBytes,
  memory,
  includeExpired = false,
  dryRun = false,
  runId = newRunId(new Date(), 'promote'),
  recordsPerTransaction = 500,
}: PromoteOptions): Promise<PromoteResult> {
  const names = topicNames(prefix);
  const result: PromoteResult = {
    runId,
    source: source.name,
    dryRun,
    read: 0,
    promoted: new Map(),
    alreadyPromoted: 0,
    repeats: 0,
    expired: 0,
    memory,
    includeExpired,
    refused: new Map(),
  };
  const rawSchemaId = await ownSchemaId(serde, prefix, names.raw);
  const producer = dryRun
    ? undefined
    : new EosProducer({
        settings,
        transactionalId: promoteTransactionalId(prefix, source.name),
        transactionTimeoutMs,
        maxMessageBytes,
      });
  // Before the marks are read: from here on no earlier run of this source can commit anything more.
  await producer?.open();
  try {
    const earlier = await readPromotions(settings, prefix);
    const thisRun = new Set<string>();
    let inTransaction = 0;
    await readHeld(settings, serde, prefix, async (held) => {
      if (held.source !== source.name) return;
      result.read++;
      const check = verifySignature(held.body, held.headers['x-signature'], source.keys);
      if (!check.ok) {
        count(result.refused, check.reason);
        return;
      }
      const key = promotionKey(held.source, held.webhookId);
      if (earlier.has(key)) {
        result.alreadyPromoted++;
        return;
      }
      // Judged by the time it is sent at. Not remembered for this run: a later request of the id may be recent enough.
      const now = Date.now();
      if (!includeExpired && isPromoteExpired(held.receivedAt, now, memory)) {
        result.expired++;
        return;
      }
      if (thisRun.has(key)) {
        result.repeats++;
        return;
      }
      thisRun.add(key);
      count(result.promoted, check.keyId);
      if (producer === undefined) return;
      const mark: PromotionMark = {
        run: runId,
        ingestId: held.ingestId,
        keyId: check.keyId,
        promotedAt: now,
      };
      await producer.send({
        topic: names.raw,
        // The partitioner's choice, as ingest's: the webhook id's partition, where the router knows it.
        partition: undefined,
        key: Buffer.from(held.webhookId, 'utf8'),
        value: await serde.encode(rawSchemaId, promotedEnvelope(held, check.keyId)),
        timestamp: now,
        headers: { [PROMOTE_HEADER]: runId },
      });
      await producer.send({
        topic: names.quarantinePromotions,
        partition: undefined,
        key: Buffer.from(key, 'utf8'),
        value: encodeMark(mark),
        timestamp: now,
      });
      inTransaction++;
      if (inTransaction >= recordsPerTransaction || now - producer.openedAt >= MAX_TRANSACTION_MS) {
        await producer.commit(COMMIT_TIMEOUT_MS);
        inTransaction = 0;
      }
    });
    await producer?.commit(COMMIT_TIMEOUT_MS);
    return result;
  } catch (error) {
    // What was committed stays promoted (and marked); the open transaction's records are never seen.
    await producer?.abort(COMMIT_TIMEOUT_MS).catch(() => undefined);
    throw error;
  } finally {
    await producer?.close();
  }
}

/** The summary the command prints. */
export function promoteSummary(result: PromoteResult): string {
  const total = (map: Map<string, number>) => [...map.values()].reduce((a, b) => a + b, 0);
  const detail = (map: Map<string, number>) =>
    map.size === 0 ? '' : ` (${[...map].map(([name, n]) => `${name} ${n}`).join(', ')})`;
  const promoted = total(result.promoted);
  return [
    `promote ${result.runId} of source ${result.source}${result.dryRun ? ' (dry run: nothing sent)' : ''}`,
    `  read             ${result.read} quarantined request(s)`,
    `  ${result.dryRun ? 'would promote' : 'promoted     '}    ${promoted} to webhooks.raw${detail(result.promoted)}${result.dryRun || promoted === 0 ? '' : ` with ${PROMOTE_HEADER}: ${result.runId}`}`,
    `  already promoted ${result.alreadyPromoted} (by an earlier run)`,
    ...(result.repeats > 0
      ? [`  repeats          ${result.repeats} more request(s) of ids promoted in this run`]
      : []),
    ...(result.expired > 0 ? expiredLines(result) : []),
    ...(result.includeExpired ? ['  expired          included (--include-expired)'] : []),
    `  still refused    ${total(result.refused)}${detail(result.refused)}: they stay in the quarantine`,
  ].join('\n');
}

/** Why requests were held back, with the values the limit comes from, and the flag that sends them. */
function expiredLines({ expired, memory }: PromoteResult): string[] {
  const limit = promotableForMs(memory);
  const rule =
    'DEDUPE_WINDOW − WEBHOOK_MAX_AGE − WEBHOOK_MAX_AHEAD − ' +
    `${formatDuration(EXPIRY_MARGIN_MS)} (${[memory.dedupeWindowMs, memory.maxAgeMs, memory.maxAheadMs, EXPIRY_MARGIN_MS].map(formatDuration).join(' − ')})`;
  return [
    limit > 0
      ? `  expired          ${expired} received over ${(limit / 3_600_000).toFixed(1)} h ago = ${rule}:`
      : `  expired          ${expired}: ${rule} leaves no time to promote in:`,
    '                   another attempt of their ids, routed before, may be forgotten by the router by now,',
    '                   and promoting one would route it twice. They stay in the quarantine. Add',
    '                   --include-expired only if no other attempt of those ids was accepted.',
  ];
}
