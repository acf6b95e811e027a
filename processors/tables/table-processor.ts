// The tables stage's processor: merges each entity event into its key's state and writes the table
// row when it changes (a tombstone when the entity is deleted).
//
// applyEvent is idempotent and order-independent (merge.ts); the stage still runs exactly-once, since a
// late write by an old owner could move a compacted row or the merge state backwards.
import type { InputRecord, Processor, ProcessorContext } from '../../runtime/streams/processor.js';
import { applyEvent, latestValue, type MergeEvent } from './merge.js';
import { MERGE_STORE, type MergeStore } from './merge-store.js';

/** Stream time between two sweeps for states that hold nothing (deletion markers are kept: merge.ts). */
export const SWEEP_INTERVAL_MS = 3_600_000;

/** An entity event as decoded from its stream (the fields the merge reads, plus receivedAt). */
export interface EntityInput extends MergeEvent {
  readonly receivedAt: number;
}

export class TableProcessor implements Processor<EntityInput | null> {
  #context!: ProcessorContext;
  #store!: MergeStore;

  constructor(
    /** The sink of the table of each input topic. */
    private readonly sinkOf: (topic: string) => string,
    private readonly table: (topic: string) => string,
  ) {}

  init(context: ProcessorContext): void {
    this.#context = context;
    this.#store = context.getStore<MergeStore>(MERGE_STORE);
    context.schedule(SWEEP_INTERVAL_MS, (streamTime) => {
      const forgotten = this.#store.forgetBefore(streamTime);
      if (forgotten > 0)
        context.instrument('processor.tables.forgotten', { table: this.table(context.topic) }, forgotten);
    });
  }

  process(record: InputRecord<EntityInput | null>): void {
    const context = this.#context;
    const table = this.table(record.topic);
    const event = record.value;
    if (event === null || record.key === null) {
      context.instrument('processor.tables.event', { table, outcome: 'skipped' });
      return;
    }
    const before = this.#store.get(record.key);
    const result = applyEvent(before, event);
    if (!result.stateChanged) {
      context.instrument('processor.tables.event', { table, outcome: 'unchanged' });
      return;
    }
    this.#store.put(record.key, result.state, record.timestamp);
    if (result.tableChanged) {
      const value = latestValue(result.state);
      if (value !== undefined) context.forward(this.sinkOf(record.topic), record.key, value);
      context.instrument('processor.tables.freshness', { table }, (Date.now() - event.receivedAt) / 1000);
    }
    context.instrument('processor.tables.event', {
      table,
      outcome: result.tableChanged ? 'merged' : 'state-only',
    });
  }
}
