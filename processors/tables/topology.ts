// The tables stage as data: entity.<name> → TableProcessor → entity.<name>.latest, each partition's
// merge state logged to entity.<name>.merge-changelog. Topic names come in, so replay can reuse it.
import type { SinkNode, Topology } from '../../runtime/streams/topology.js';
import type { Serde } from '../../schemas/serde.js';
import type { TableStream } from '../../schemas/topics.js';
import { MERGE_STORE, MergeStore } from './merge-store.js';
import { type EntityInput, TableProcessor } from './table-processor.js';

/** Every field of EntityInput, as the entity streams' schemas name them. */
export const ENTITY_INPUT_FIELDS = [
  'webhookId',
  'entity',
  'deleted',
  'occurredAt',
  'fields',
  'data',
  'receivedAt',
] as const satisfies readonly (keyof EntityInput)[];

export interface TableTopic {
  stream: TableStream;
  /** entity.<name>'s real name. */
  source: string;
  /** entity.<name>.latest's real name. */
  latest: string;
  changelog: string;
  /** The registry schema id of the table's values. */
  schemaId: number;
}

export function tablesTopology({
  tables,
  serde,
  windowMs,
  name = 'tables',
}: {
  tables: readonly TableTopic[];
  serde: Serde;
  windowMs: number;
  name?: string;
}): Topology<EntityInput | null> {
  const bySource = new Map(tables.map((t) => [t.source, t]));
  const of = (topic: string) => {
    const table = bySource.get(topic);
    if (table === undefined) throw new TypeError(`no table reads ${topic}`);
    return table;
  };
  const sinks: SinkNode[] = tables.map((t) => ({
    name: `latest:${t.stream}`,
    topic: t.latest,
    // Same partition count as its stream: a key's row lives where its events are merged.
    copartitioned: true,
    // encode()'s bytes without its promise once the schema is cached (serde-cached.test.ts).
    serialize: (value: unknown) => serde.encodeCached(t.schemaId, value) ?? serde.encode(t.schemaId, value),
  }));
  // The fields the merge reads (EntityInput): the rest of an event (its typed energy-switch fields, ids,
  // query variables) is read past, not built.
  const readEvent = serde.fieldsReader<EntityInput>(ENTITY_INPUT_FIELDS);
  return {
    name,
    sources: tables.map((t) => ({
      topic: t.source,
      deserialize(message): EntityInput | null | Promise<EntityInput | null> {
        // The router wrote these with the registry; a value that does not decode is a bug upstream.
        if (message.value === null) return null;
        // decode()'s fields (or its error) at once when the writer schema is cached: no microtask per record.
        return readEvent(message.value) ?? serde.decode<EntityInput>(message.value);
      },
    })),
    processor: {
      name: 'merge',
      create: () =>
        new TableProcessor(
          (topic) => `latest:${of(topic).stream}`,
          (topic) => of(topic).stream,
        ),
    },
    stores: [
      {
        name: MERGE_STORE,
        changelogTopic: (source) => of(source).changelog,
        create: (_partition, stateDir) => new MergeStore(windowMs, stateDir),
      },
    ],
    sinks,
  };
}
