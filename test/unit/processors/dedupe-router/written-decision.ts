// A router decision as the bytes it would write (topic, key, Avro value) and why: how the fast-path tests
// compare route() and routeFast. A value the fast route wrote as Avro already is its bytes after the
// header's room; any other is written with its topic's schema.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import avro from 'avsc';
import type { RoutedOutputs } from '../../../../processors/dedupe-router/fast-route.js';
import type { RouteOutput } from '../../../../processors/dedupe-router/route.js';
import { AVRO_HEADER_BYTES, EncodedAvroValue } from '../../../../schemas/serde.js';

const schemasDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../../schemas');
const typeOf = (name: string) =>
  avro.Type.forSchema(JSON.parse(readFileSync(path.join(schemasDir, `${name}.avsc`), 'utf8')));
/** The value schema of each routed topic (registered as `<topic>-value`). */
export const SCHEMA_OF: Record<RouteOutput['topic'], string> = {
  'webhooks.unique': 'raw-envelope',
  'entity.user': 'entity-event',
  'entity.account': 'entity-event',
  'entity.document': 'entity-event',
  'entity.todo': 'entity-event',
  'entity.other': 'entity-event',
  'entity.energy-switch': 'entity-energy-switch',
  'entity.energy-switch-commission': 'entity-energy-switch-commission',
  'webhooks.failures': 'webhook-failure',
  'webhooks.dlq': 'dead-letter',
};
const types = new Map(Object.entries(SCHEMA_OF).map(([topic, name]) => [topic, typeOf(name)]));

export function written(decision: RoutedOutputs) {
  return {
    kind: decision.kind,
    reason: decision.reason,
    outputs: decision.outputs.map((o) => ({
      topic: o.topic,
      key: o.key,
      value: (o.value instanceof EncodedAvroValue
        ? o.value.buffer.subarray(AVRO_HEADER_BYTES)
        : types.get(o.topic)!.toBuffer(o.value)
      ).toString('hex'),
    })),
  };
}
