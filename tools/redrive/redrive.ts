// `hookledger redrive`: appends dead-lettered envelopes (chosen by reason or time) to webhooks.raw again
// with a redrive header naming the run; the live router, the only writer of the dedupe state, then
// processes each id whose recorded decision is "dead-lettered" once per run (dedupe-processor.ts).
// Letters older than the dedupe window are skipped unless the operator includes them (select.ts); the
// rest are written in chunks as they are read.
import { randomBytes } from 'node:crypto';
import type { DeadLetter } from '../../processors/dedupe-router/dead-letter.js';
import { REDRIVE_HEADER, REDRIVE_STAGE_HEADER } from '../../processors/dedupe-router/dedupe-processor.js';
import { UNDECODABLE_REASON } from '../../processors/dedupe-router/poison.js';
import { formatDuration } from '../../runtime/duration.js';
import { withAdmin } from '../../runtime/kafka/admin.js';
import type { KafkaError, KafkaSettings } from '../../runtime/kafka/rdkafka.js';
import { readToEnd } from '../../runtime/kafka/read-to-end.js';
import { type OutRecord, openWriter, type RecordWriter } from '../../runtime/kafka/write-records.js';
import { ownSchemaId } from '../../schemas/own-schema-id.js';
import type { RawEnvelope } from '../../schemas/raw-envelope.js';
import type { Serde } from '../../schemas/serde.js';
import { topicNames } from '../../schemas/topics.js';
import { MissingTopicError } from '../quarantine/held.js';
import {
  EXPIRY_MARGIN_MS,
  FETCH_STAGE,
  type RedriveFilter,
  Selection,
  type SelectionCounts,
} from './select.js';

export type { RedriveFilter } from './select.js';

/**
 * What a run holds before writing it: records, bytes (a record can be up to the body limit), and time (a
 * letter is judged fresh enough when it is read, so its record must not wait long to be written).
 */
export interface ChunkLimits {
  records: number;
  bytes: number;
  waitMs: number;
}

export const CHUNK_LIMITS: ChunkLimits = { records: 1_000, bytes: 4 * 1_048_576, waitMs: 5_000 };

export interface RedriveProgress {
  /** webhooks.dlq offsets passed so far, and in all when the run started (a transactional topic has markers). */
  done: bigint;
  total: bigint;
  read: number;
  /** Acknowledged by the brokers so far (on a dry run: chosen to send). */
  sent: number;
  elapsedMs: number;
}

export interface RedriveOptions {
  settings: KafkaSettings;
  serde: Serde;
  prefix: string;
  filter: RedriveFilter;
  /** DEDUPE_WINDOW, read from the same configuration as the router's: older letters are skipped. */
  dedupeWindowMs: number;
  /** Send letters older than the window too: the operator says no earlier redrive sent them. */
  includeExpired?: boolean;
  dryRun?: boolean;
  /** The run id (the header's value); a new one per invocation. */
  runId?: string;
  /** Called at most every `progressEveryMs` while reading, and once at the end if it was called before. */
  onProgress?: (progress: RedriveProgress) => void;
  progressEveryMs?: number;
  chunk?: ChunkLimits;
  now?: () => number;
  /**
   * Ctrl-C: the read stops at once and the run ends with what the brokers acknowledged so far
   * (`interrupted`); what was chosen but not yet written is not sent, and a new run sends it.
   */
  signal?: AbortSignal;
}

export interface RedriveResult extends SelectionCounts {
  runId: string;
  dryRun: boolean;
  /** Appended to webhooks.raw and acknowledged (or that would be, on a dry run). */
  sent: number;
  dedupeWindowMs: number;
  includeExpired: boolean;
  /** Stopped by its signal (Ctrl-C) before it read to the end: `sent` is what went through. */
  interrupted: boolean;
}

/**
 * A run that failed after appending some records: they stay in webhooks.raw and the router processes them.
 * Running redrive again is safe (an id the router routed since is a duplicate).
 */
export class RedriveIncompleteError extends Error {
  override name = 'RedriveIncompleteError';
  constructor(
    readonly runId: string,
    readonly sent: number,
    cause: unknown,
  ) {
    super(`redrive ${runId} stopped after appending ${sent} record(s) to webhooks.raw`, { cause });
  }
}

/**
 * Appends a chunk, each record's acknowledgement counted on its own: when one fails, those acknowledged
 * are in webhooks.raw all the same, and the run's "stopped after appending N" must count them.
 */
export async function appendChunk(
  writer: Pick<RecordWriter, 'writeEach'>,
  records: readonly OutRecord[],
): Promise<{ acknowledged: number; failure?: KafkaError }> {
  const outcomes = await writer.writeEach(records);
  const failure = outcomes.find((outcome) => outcome !== undefined);
  const acknowledged = outcomes.filter((outcome) => outcome === undefined).length;
  return failure === undefined ? { acknowledged } : { acknowledged, failure };
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
  dedupeWindowMs,
  includeExpired = false,
  dryRun = false,
  runId = newRunId(),
  onProgress,
  progressEveryMs = 1_000,
  chunk = CHUNK_LIMITS,
  now = Date.now,
  signal,
}: RedriveOptions): Promise<RedriveResult> {
  const started = now();
  const names = topicNames(prefix);
  const selection = new Selection({ filter, dedupeWindowMs, includeExpired, now });
  let sent = 0;
  let interrupted = false;
  const marks = await withAdmin(settings, async (admin) => {
    const [dlq] = await admin.describeTopics([names.dlq]);
    if (dlq === undefined)
      throw new MissingTopicError(`topic ${names.dlq} does not exist: run \`hookledger topics\` first`);
    return admin.watermarks(names.dlq);
  });
  // After the topic check: a mistyped TOPIC_PREFIX registers no subject of its own.
  const rawSchemaId = await ownSchemaId(serde, prefix, names.raw);
  const total = marks.reduce((sum, m) => sum + BigInt(m.high - m.low), 0n);
  /** The next offset per partition, from which progress counts what was passed. */
  const position = new Map(marks.map((m) => [m.partition, m.low]));
  const progress = (): RedriveProgress => {
    let done = 0n;
    for (const { partition, low, high } of marks)
      done += BigInt(Math.min(position.get(partition) ?? low, high) - low);
    return { done, total, read: selection.counts.read, sent, elapsedMs: now() - started };
  };
  let reported: number | undefined;

  // Written as they are read, so a run holds one chunk, never the whole selection.
  let writer: RecordWriter | undefined;
  let pending: OutRecord[] = [];
  let pendingBytes = 0;
  let pendingSince = 0;
  const flush = async () => {
    if (pending.length === 0) return;
    writer ??= await openWriter(settings, names.raw, 'redrive-writer');
    const { acknowledged, failure } = await appendChunk(writer, pending);
    sent += acknowledged;
    pending = [];
    pendingBytes = 0;
    if (failure !== undefined) throw failure;
  };

  try {
    await readToEnd({
      settings,
      topic: names.dlq,
      partitions: marks.map(({ partition }) => ({ partition })),
      component: 'redrive-reader',
      ...(signal === undefined ? {} : { signal }),
      onRecord: async ({ partition, offset, key, value, timestamp }) => {
        // Within a batch too: Ctrl-C stops before the next letter, not at the end of the batch.
        signal?.throwIfAborted();
        position.set(partition, Number(offset) + 1);
        if (value === null) return;
        const letter = await serde.decode<DeadLetter>(value);
        if (selection.choose(letter, timestamp) === 'send') {
          const record: OutRecord = {
            key: key ?? letter.webhookId,
            // Encoded on a dry run too: a letter that cannot be encoded fails the dry run as it would the run.
            value: await serde.encode(rawSchemaId, envelopeOf(letter)),
            // The DLQ is written to the raw record's partition number: back to where the router holds the id.
            partition,
            headers: { [REDRIVE_HEADER]: runId, [REDRIVE_STAGE_HEADER]: letter.stage },
          };
          if (dryRun) sent++;
          else {
            if (pending.length === 0) pendingSince = now();
            pending.push(record);
            pendingBytes += record.value?.length ?? 0;
          }
        }
        if (
          pending.length >= chunk.records ||
          pendingBytes >= chunk.bytes ||
          (pending.length > 0 && now() - pendingSince >= chunk.waitMs)
        )
          await flush();
        if (onProgress !== undefined && now() - (reported ?? started) >= progressEveryMs) {
          reported = now();
          onProgress(progress());
        }
      },
    });
    await flush();
  } catch (error) {
    // Stopped between chunks (each chunk's write is awaited where it starts): what went through is `sent`.
    if (signal?.aborted === true) interrupted = true;
    else throw !dryRun && sent > 0 ? new RedriveIncompleteError(runId, sent, error) : error;
  } finally {
    await writer?.close();
  }
  if (reported !== undefined) onProgress?.(interrupted ? progress() : { ...progress(), done: total });
  return { runId, dryRun, ...selection.counts, sent, dedupeWindowMs, includeExpired, interrupted };
}

/** The summary the command prints. */
export function redriveSummary(result: RedriveResult): string {
  const selected = [...result.selected.values()].reduce((a, b) => a + b, 0);
  const byReason = [...result.selected].map(([r, n]) => `${r} ${n}`).join(', ');
  const age = `${formatDuration(result.dedupeWindowMs)} − ${formatDuration(EXPIRY_MARGIN_MS)}`;
  return [
    `redrive ${result.runId}${result.dryRun ? ' (dry run: nothing sent)' : ''}`,
    ...(result.interrupted
      ? [
          '  interrupted   before the end of webhooks.dlq: the counts are of what was read; running redrive',
          '                again is safe (it sends the rest, and the ids the router routed since are duplicates)',
        ]
      : []),
    `  read          ${result.read} dead letter(s)`,
    `  selected      ${selected}${byReason ? ` (${byReason})` : ''}`,
    `  ${result.dryRun ? 'would send' : 'sent      '}    ${result.sent} to webhooks.raw with ${REDRIVE_HEADER}: ${result.runId}`,
    `  skipped by filter ${result.skippedByFilter}`,
    ...(result.skippedUndecodable > 0
      ? [
          `  skipped       ${result.skippedUndecodable} not raw envelopes (${UNDECODABLE_REASON}): nothing to send again`,
        ]
      : []),
    ...(result.skippedFetchAnswers > 0
      ? [
          `  skipped       ${result.skippedFetchAnswers} answers of the enrich stage's fetches (stage ${FETCH_STAGE}): not deliveries;`,
          '                the deliveries they were to enrich were routed, and the stage fetches again for the next',
        ]
      : []),
    ...(result.skippedExpired > 0
      ? [
          `  skipped       ${result.skippedExpired} expired: recorded over DEDUPE_WINDOW − ${formatDuration(EXPIRY_MARGIN_MS)} (${age}) ago, the router may`,
          '                no longer know their ids: if an earlier redrive sent one, sending it again routes it',
          '                twice. Add --include-expired only if no earlier redrive sent them.',
        ]
      : []),
    ...(result.includeExpired ? ['  expired       included (--include-expired)'] : []),
    ...(result.repeats > 0 ? [`  repeats       ${result.repeats} more dead letter(s) of ids sent once`] : []),
  ].join('\n');
}
