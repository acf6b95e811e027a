// The enrich stage as data: entity.energy-switch → EnrichProcessor → entity.energy-switch (the fetched
// event), webhooks.failures, webhooks.dlq. No store: whether a delivery was enriched is its fetched
// event in the same transaction as the input offset. The source decides and fetches (async, with a
// read-ahead over the batch so fetches run concurrently); the processor only forwards.
import type { SinkNode, SourceMessage, Topology } from '../../runtime/streams/topology.js';
import type { RawEnvelope } from '../../schemas/raw-envelope.js';
import type { Serde } from '../../schemas/serde.js';
import { buildDeadLetter } from '../dedupe-router/dead-letter.js';
import type { EnergySwitchEvent } from '../dedupe-router/entity-event.js';
import { FETCHED_SUFFIX, mapAnswer } from './answer.js';
import { ENRICH_SINKS, type EnrichInput, EnrichProcessor } from './enrich-processor.js';
import { type FetchPolicy, fetchDecision } from './fetch-decision.js';
import type { Fetcher } from './fetcher.js';

export interface EnrichTopologyOptions {
  /** entity.energy-switch's real name: read, and written with fetched events. */
  source: string;
  failures: string;
  dlq: string;
  /** Registry schema ids of the three outputs' values, by real topic name. */
  schemaIds: ReadonlyMap<string, number>;
  serde: Serde;
  policy: FetchPolicy;
  query: string;
  fetcher: Pick<Fetcher, 'fetch'>;
  /** The entity topics' max.message.bytes as sized for INGEST_BODY_LIMIT (route.ts RouteSettings). */
  maxEntityEventBytes?: number;
  now?: () => number;
  name?: string;
}

export function enrichTopology({
  source,
  failures,
  dlq,
  schemaIds,
  serde,
  policy,
  query,
  fetcher,
  maxEntityEventBytes,
  now = Date.now,
  name = 'enrich',
}: EnrichTopologyOptions): Topology<EnrichInput> {
  const sink = (sinkName: string, topic: string, copartitioned: boolean): SinkNode => {
    const schemaId = schemaIds.get(topic);
    if (schemaId === undefined) throw new Error(`no registered value schema for ${topic}`);
    return { name: sinkName, topic, copartitioned, serialize: (value) => serde.encode(schemaId, value) };
  };

  async function read(message: SourceMessage, signal?: AbortSignal): Promise<EnrichInput> {
    if (message.value === null || message.key === null) return { skip: 'tombstone' };
    // Written by the router or this stage with the registry: a value that does not decode is a bug upstream.
    const event = await serde.decode<EnergySwitchEvent>(message.value);
    const decision = fetchDecision(event, policy);
    if ('skip' in decision) return decision;
    const answer = await fetcher.fetch(decision.fetch, query, event.entityId, signal);
    // The event's time: when its request was sent (Answer.sentAt), not when the answer finished arriving,
    // which a delivery dated in between (an update, a deletion) would lose to.
    const fetchedAt = answer.sentAt ?? now();
    const key = message.key.toString('utf8');
    const output = mapAnswer(
      { key, event, api: decision.fetch, query, fetchedAt },
      answer,
      maxEntityEventBytes,
    );
    return { output, fetchedAt, receivedAt: event.receivedAt };
  }

  /** The current batch's reads, started together: `deserialize` takes its record's. */
  let ahead = new Map<string, Promise<EnrichInput>>();
  /** Aborted when the next batch is read ahead: the reads of this one not taken are never taken. */
  let batch = new AbortController();
  const positionOf = (m: SourceMessage) => `${m.partition}/${m.offset}`;

  return {
    name,
    sources: [
      {
        topic: source,
        readAhead(messages) {
          // Reads of an earlier batch not taken were rewound: they are read again when fetched again.
          // Those still waiting for a slot or a retry send nothing more: after an aborted batch they
          // would hold the slots and the rate ahead of this batch's own reads, past the two rounds of
          // ENRICH_RETRY_BUDGET a transaction is sized for.
          batch.abort();
          batch = new AbortController();
          ahead = new Map();
          for (const message of messages) {
            const pending = read(message, batch.signal);
            // Taken (and its failure handled) by deserialize, or dropped with the next batch.
            pending.catch(() => undefined);
            ahead.set(positionOf(message), pending);
          }
        },
        deserialize(message) {
          const position = positionOf(message);
          const pending = ahead.get(position);
          if (pending === undefined) return read(message);
          ahead.delete(position);
          return pending;
        },
      },
    ],
    processor: { name: 'enrich', create: () => new EnrichProcessor() },
    stores: [],
    sinks: [
      // Same key, so same partition as the delivery's event; written where the tables read it.
      sink(ENRICH_SINKS['entity.energy-switch'], source, true),
      sink(ENRICH_SINKS['webhooks.failures'], failures, false),
      sink(ENRICH_SINKS['webhooks.dlq'], dlq, false),
    ],
    deadLetter: {
      sink: ENRICH_SINKS['webhooks.dlq'],
      build(record, failure) {
        const key = record.key ?? `offset:${record.topic}/${record.partition}/${record.offset}`;
        // The processor threw: a bug. What is known of the delivery goes with it, for people to look at.
        const envelope: RawEnvelope = {
          webhookId: `${key}${FETCHED_SUFFIX}`,
          source: key.split('/')[0] ?? '',
          trigger: null,
          webhookDate: null,
          receivedAt: record.timestamp,
          body: Buffer.alloc(0),
          headers: {},
          query: null,
          verifiedKeyId: null,
          ingestId: '',
        };
        return {
          key: envelope.webhookId,
          value: buildDeadLetter(
            envelope,
            failure.reason === 'output-too-large' ? 'output-too-large' : 'processor-error',
            failure.message,
            'enrich.fetch',
          ),
        };
      },
    },
  };
}
