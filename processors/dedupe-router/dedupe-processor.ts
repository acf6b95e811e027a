// The dedupe-router's processor: drops ids seen within the window, routes first deliveries, and
// records every decision (routed, failure, dead-lettered) in its changelog-backed store.
import type { InputRecord, Processor, ProcessorContext } from '../../runtime/streams/processor.js';
import type { RawEnvelope } from '../../schemas/raw-envelope.js';
import { DEDUPE_STORE, type DedupeStore } from './dedupe-store.js';
import { type RoutedOutputs, routeFast } from './fast-route.js';
import { parseInstant } from './instant.js';
import { type RawInput, UNDECODABLE_REASON, undecodableDeadLetter } from './poison.js';
import { RetryCounts } from './retry-counts.js';
import { type RouteContext, type RouteSettings, route } from './route.js';

/**
 * Marks a record `hookledger redrive` appended again after a fix. Its value names the redrive run:
 * each run processes a dead-lettered id once, and a repeated record of the same run is a duplicate.
 */
export const REDRIVE_HEADER = 'hookledger-redrive';

/**
 * The stage of the dead letter a redriven record came from (dead-letter.ts DLQ_STAGES). It tells whether
 * the first delivery is in webhooks.unique already: `route()`'s rejections wrote it with the dead letter;
 * the stream kit's (`dedupe-router.process`: processor-error, output-too-large) wrote nothing of the record.
 */
export const REDRIVE_STAGE_HEADER = 'hookledger-redrive-stage';

/** The stream kit's dead letters: nothing of the record was written, webhooks.unique included. */
const KIT_STAGE = 'dedupe-router.process';

/** The id under which a redrive run's own record is remembered (a second entry in the same id set). */
export function redriveId(id: string, run: string): string {
  return `${id}\u0000redrive\u0000${run}`;
}

/**
 * The key under which the store remembers that a redrive wrote an id to webhooks.unique. A letter of the
 * stream kit's stage says unique was never written; after the first redrive of it that is no longer true,
 * and a later redrive (which sends the id's first letter again, with the kit's stage) must not write it twice.
 */
export function uniqueWrittenId(id: string): string {
  return `${id}\u0000unique`;
}

/** Stream time between two expiry runs: often enough to bound memory, rarely enough to cost nothing. */
export const EXPIRY_INTERVAL_MS = 60_000;

export class DedupeProcessor implements Processor<RawInput> {
  #context!: ProcessorContext;
  #store!: DedupeStore;
  readonly #retries = new RetryCounts();

  /**
   * `decide` is route() with the same settings (its fast path first, for the common delivery) except in
   * tests that emulate a router before a fix (redrive); the settings also read `webhook.date` for the
   * delivery-delay metric.
   */
  constructor(
    private readonly settings: RouteSettings = {},
    private readonly decide: (envelope: RawEnvelope, context: RouteContext) => RoutedOutputs = (
      envelope,
      context,
    ) => routeFast(envelope, settings, context) ?? route(envelope, settings, context),
  ) {}

  init(context: ProcessorContext): void {
    this.#context = context;
    this.#store = context.getStore<DedupeStore>(DEDUPE_STORE);
    // Expiry is a stream-time punctuation, not a timer: a replay of months forgets exactly as live did.
    context.schedule(EXPIRY_INTERVAL_MS, (streamTime) => {
      const forgotten = this.#store.expire(streamTime);
      if (forgotten > 0) context.instrument('processor.dedupe.expired', {}, forgotten);
    });
  }

  process(record: InputRecord<RawInput>): void {
    const context = this.#context;
    const input = record.value;
    if (!input.ok) {
      // Nothing to de-duplicate by: the record itself goes to the DLQ, once, in this transaction.
      context.forward(
        'webhooks.dlq',
        input.key ?? `offset:${input.position}`,
        undecodableDeadLetter(input, record.headers),
      );
      context.instrument('processor.dedupe.routed', { route: 'dead-lettered', reason: UNDECODABLE_REASON });
      return;
    }
    const envelope = input.envelope;
    const id = `${envelope.source}/${envelope.webhookId}`;
    const seen = this.#store.recent(id, context.streamTime);
    // A redrive of an id that was dead-lettered is processed once per redrive run; anything else
    // seen is a duplicate (the changelog's decision is what tells the two apart).
    const run = record.headers[REDRIVE_HEADER];
    // A redrive is the operator's, not the platform's: it says nothing about retries or lateness.
    if (run === undefined) this.#observeDelivery(envelope, id, seen !== undefined);
    const redriveKey = run === undefined ? undefined : redriveId(id, run);
    const redrive =
      seen !== undefined &&
      seen.kind === 'dead-lettered' &&
      redriveKey !== undefined &&
      this.#store.recent(redriveKey, context.streamTime) === undefined;
    if (seen !== undefined && !redrive) {
      context.instrument('processor.dedupe.duplicate', { decision: seen.kind });
      return;
    }
    // A redriven record is the operator's: its age is not held against it (every other check is).
    const decision = this.decide(envelope, { operatorApproved: run !== undefined });
    // webhooks.unique holds the first delivery of every id once. A redriven letter of route() was written
    // there when it was dead-lettered, even when its id has been forgotten since (`--include-expired`); a
    // letter of the stream kit never was, unless an earlier redrive of it wrote it (and remembered so). A
    // redrive without the stage (an older redrive) is taken as route()'s.
    const stage = run === undefined ? undefined : record.headers[REDRIVE_STAGE_HEADER];
    const uniqueWritten =
      stage === undefined
        ? redrive
        : stage !== KIT_STAGE || this.#store.recent(uniqueWrittenId(id), context.streamTime) !== undefined;
    const now = Date.now();
    for (const output of decision.outputs) {
      if (output.topic === 'webhooks.unique') {
        if (uniqueWritten) continue;
        if (run !== undefined)
          this.#store.put(
            uniqueWrittenId(id),
            { kind: decision.kind, seenAt: record.timestamp },
            record.timestamp,
          );
      }
      context.forward(output.topic, output.key, output.value);
      // How far behind the router runs: a redriven record was received days ago, which says nothing of that.
      if (run === undefined && output.topic.startsWith('entity.'))
        context.instrument('processor.dedupe.freshness', {}, (now - envelope.receivedAt) / 1000);
    }
    this.#store.put(id, { kind: decision.kind, seenAt: record.timestamp }, record.timestamp);
    if (redrive)
      this.#store.put(redriveKey!, { kind: decision.kind, seenAt: record.timestamp }, record.timestamp);
    context.instrument('processor.dedupe.routed', {
      route: decision.kind,
      reason: decision.reason ?? '',
      ...(redrive ? { redrive: 'true' } : {}),
    });
  }

  /** How often the platform retries (duplicates of this id so far) and how late it delivers (receivedAt − webhook.date). */
  #observeDelivery(envelope: RawEnvelope, id: string, duplicate: boolean): void {
    const labels = { source: envelope.source, trigger: envelope.trigger ?? '' };
    this.#context.instrument(
      'processor.dedupe.delivery',
      labels,
      duplicate ? this.#retries.duplicate(id) : 0,
    );
    const date =
      envelope.webhookDate === null
        ? undefined
        : parseInstant(envelope.webhookDate, this.settings.webhookDateOffsetMinutes);
    // A date ahead of receivedAt is the two clocks disagreeing: it counts as on time, not as negative.
    if (date !== undefined)
      this.#context.instrument(
        'processor.dedupe.delay',
        labels,
        Math.max(0, envelope.receivedAt - date) / 1000,
      );
  }
}
