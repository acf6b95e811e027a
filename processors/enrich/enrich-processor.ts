// The enrich stage's processor: what the source decided and fetched (topology.ts) becomes records in
// the batch's transaction. Synchronous like every processor: the fetch happened before, in the source.
import type { InputRecord, Processor, ProcessorContext } from '../../runtime/streams/processor.js';
import type { EnrichOutput } from './answer.js';
import type { SkipReason } from './fetch-decision.js';

/** One energy-switch event, as the source read it: left alone, or answered by a fetch. */
export type EnrichInput =
  | { readonly skip: SkipReason | 'tombstone' }
  | { readonly output: EnrichOutput; readonly fetchedAt: number; readonly receivedAt: number };

/** The sink of each output topic (logical names). */
export const ENRICH_SINKS = {
  'entity.energy-switch': 'energy-switch',
  'webhooks.failures': 'failures',
  'webhooks.dlq': 'dlq',
} as const;

const OUTCOMES = {
  'entity.energy-switch': 'fetched',
  'webhooks.failures': 'operation-failure',
  'webhooks.dlq': 'dead-lettered',
} as const;

export class EnrichProcessor implements Processor<EnrichInput> {
  #context!: ProcessorContext;

  init(context: ProcessorContext): void {
    this.#context = context;
  }

  process(record: InputRecord<EnrichInput>): void {
    const input = record.value;
    if ('skip' in input) {
      this.#context.instrument('processor.enrich.event', { outcome: `skipped-${input.skip}` });
      return;
    }
    const { output, fetchedAt } = input;
    // The fetched record is the state at fetch time: that is its event time (docs/design.md, "enrich").
    this.#context.forward(ENRICH_SINKS[output.topic], output.key, output.value, { timestamp: fetchedAt });
    this.#context.instrument('processor.enrich.event', { outcome: OUTCOMES[output.topic] });
    if (output.topic === 'entity.energy-switch')
      this.#context.instrument('processor.enrich.freshness', {}, (fetchedAt - input.receivedAt) / 1000);
  }
}
