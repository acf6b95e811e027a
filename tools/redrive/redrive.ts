// `hookledger redrive`: appends dead-lettered envelopes (chosen by reason or time) to webhooks.raw again
// with a redrive header naming the run; the live router, the only writer of the dedupe state, then
// processes each id whose recorded decision is "dead-lettered" once per run (dedupe-processor.ts).
import { randomBytes } from 'node:crypto';
import type { DeadLetter } from '../../processors/dedupe-router/dead-letter.js';
import { REDRIVE_HEADER } from '../../processors/dedupe-router/dedupe-processor.js';
import { UNDECODABLE_REASON } from '../../processors/dedupe-router/poison.js';
import { withAdmin } from '../../runtime/kafka/admin.js';
import type { KafkaSettings } from '../../runtime/kafka/rdkafka.js';
import { readToEnd } from '../../runtime/kafka/read-to-end.js';
import { type OutRecord, writeRecords } from '../../runtime/kafka/write-records.js';
import type { RawEnvelope } from '../../schemas/raw-envelope.js';
import type { Serde } from '../../schemas/serde.js';
import { topicNames, valueSubject } from '../../schemas/topics.js';

export interface RedriveFilter {
  /** Only these reasons (any when empty or absent). */
  reasons?: readonly string[];
  /** The dead letter's record time (the raw record's), epoch ms: from inclusive, to exclusive. */
  fromTime?: number;
  toTime?: number;
}

export interface RedriveOptions {
  settings: KafkaSettings;
  serde: Serde;
  prefix: string;
  filter: RedriveFilter;
  dryRun?: boolean;
  /** The run id (the header's value); a new one per invocation. */
  runId?: string;
}

export interface RedriveResult {
  runId: string;
  dryRun: boolean;
  /** Dead letters read from webhooks.dlq. */
  read: number;
  /** Matching the filter, by reason. */
  selected: Map<string, number>;
  /** Appended to webhooks.raw (or that would be, on a dry run). */
  sent: number;
  skippedByFilter: number;
  /** Dead letters of records that were not raw envelopes: there is no envelope to send again. */
  skippedUndecodable: number;
  /** Later dead letters of an id already selected in this run (its first one is sent once). */
  repeats: number;
}

/** `redrive-20261122-160501-1a2b` (`promote-…` for a quarantine promotion): unique per invocation. */
export function newRunId(now = new Date(), kind = 'redrive'): string {
  const stamp = now
    .toISOString()
    .replace(/\.\d+Z$/, '')
    .replace(/[-:]/g, '')
    .replace('T', '-');
  return `${kind}-${stamp}-${randomBytes(2).toString('hex')}`;
}

/** Whether a dead letter is chosen by the filter. */
export function matches(filter: RedriveFilter, reason: string, timestamp: number): boolean {
  if (filter.reasons !== undefined && filter.reasons.length > 0 && !filter.reasons.includes(reason))
    return false;
  if (filter.fromTime !== undefined && timestamp < filter.fromTime) return false;
  if (filter.toTime !== undefined && timestamp >= filter.toTime) return false;
  return true;
}

/** The raw envelope a dead letter was made from: its fields are the envelope's, unchanged. */
export function envelopeOf(letter: DeadLetter): RawEnvelope {
  return {
    webhookId: letter.webhookId,
    source: letter.source,
    trigger: letter.trigger,
    webhookDate: letter.webhookDate,
    receivedAt: letter.receivedAt,
    body: letter.body,
    headers: letter.headers,
    query: letter.query,
    verifiedKeyId: letter.verifiedKeyId,
    ingestId: letter.ingestId,
  };
}

export async function redrive({
  settings,
  serde,
  prefix,
  filter,
  dryRun = false,
  runId = newRunId(),
}: RedriveOptions): Promise<RedriveResult> {
  const names = topicNames(prefix);
  const rawSchemaId = await serde.latestSchemaId(valueSubject(names.raw));
  const result: RedriveResult = {
    runId,
    dryRun,
    read: 0,
    selected: new Map(),
    sent: 0,
    skippedByFilter: 0,
    skippedUndecodable: 0,
    repeats: 0,
  };
  const seen = new Set<string>();
  const records: OutRecord[] = [];
  const partitions = await withAdmin(settings, async (admin) => {
    const [dlq] = await admin.describeTopics([names.dlq]);
    if (dlq === undefined)
      throw new Error(`topic ${names.dlq} does not exist: run \`hookledger topics\` first`);
    return dlq.partitions.map(({ partition }) => ({ partition }));
  });
  await readToEnd({
    settings,
    topic: names.dlq,
    partitions,
    component: 'redrive-reader',
    onRecord: async ({ partition, key, value, timestamp }) => {
      if (value === null) return;
      result.read++;
      const letter = await serde.decode<DeadLetter>(value);
      if (!matches(filter, letter.reason, timestamp)) {
        result.skippedByFilter++;
        return;
      }
      result.selected.set(letter.reason, (result.selected.get(letter.reason) ?? 0) + 1);
      if (letter.reason === UNDECODABLE_REASON) {
        result.skippedUndecodable++;
        return;
      }
      const id = `${letter.source}/${letter.webhookId}`;
      if (seen.has(id)) {
        result.repeats++;
        return;
      }
      seen.add(id);
      records.push({
        key: key ?? letter.webhookId,
        value: await serde.encode(rawSchemaId, envelopeOf(letter)),
        // The DLQ is written to the raw record's partition number: back to where the router holds the id.
        partition,
        headers: { [REDRIVE_HEADER]: runId },
      });
    },
  });
  result.sent = records.length;
  if (dryRun || records.length === 0) return result;
  await writeRecords(settings, names.raw, records);
  return result;
}

/** The summary the command prints. */
export function redriveSummary(result: RedriveResult): string {
  const selected = [...result.selected.values()].reduce((a, b) => a + b, 0);
  const byReason = [...result.selected].map(([r, n]) => `${r} ${n}`).join(', ');
  return [
    `redrive ${result.runId}${result.dryRun ? ' (dry run: nothing sent)' : ''}`,
    `  read          ${result.read} dead letter(s)`,
    `  selected      ${selected}${byReason ? ` (${byReason})` : ''}`,
    `  ${result.dryRun ? 'would send' : 'sent      '}    ${result.sent} to webhooks.raw with ${REDRIVE_HEADER}: ${result.runId}`,
    `  skipped by filter ${result.skippedByFilter}`,
    ...(result.skippedUndecodable > 0
      ? [
          `  skipped       ${result.skippedUndecodable} not raw envelopes (${UNDECODABLE_REASON}): nothing to send again`,
        ]
      : []),
    ...(result.repeats > 0 ? [`  repeats       ${result.repeats} more dead letter(s) of ids sent once`] : []),
  ].join('\n');
}
