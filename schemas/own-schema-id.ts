// The schema a topic's records are written and read with: this code's own, never the subject's newest
// version. Bytes written from this version's schema (the router's fast path writes Avro by hand in its
// layout) read as garbage, or not at all, under another version's id: during a rolling upgrade, a
// rollback, or a deployment started before the schemas' Job, the newest version under the subject is
// someone else's. Read back, records written by an older version take this version's shape (its new
// fields' defaults), so a comparison of old and new records compares values, not schema versions.

import { loadSchema } from './schema-files.js';
import type { Serde } from './serde.js';
import { catalogSubjects, valueSubject } from './topics.js';

/** A replay's copy of a topic (tools/replay/topics.ts replayTopic): `<topic>.replay-<id>`. */
const REPLAY_COPY = /\.replay-[^.]+$/;

/**
 * This code's value schema (Avro JSON text) for a catalog topic (`<prefix><name>`) or a replay's copy of
 * one; undefined for any other topic.
 */
export function currentSchemaOf(prefix: string, topic: string): string | undefined {
  const subject = valueSubject(topic.replace(REPLAY_COPY, ''));
  const entry = catalogSubjects(prefix).find((s) => s.subject === subject);
  return entry === undefined ? undefined : loadSchema(entry.schema);
}

/**
 * The id of this code's value schema for `topic` (a catalog topic), registered as `hookledger topics`
 * registers it (idempotent), or only looked up with SCHEMA_REGISTRY_AUTO_REGISTER=false.
 */
export async function ownSchemaId(
  serde: Pick<Serde, 'register'>,
  prefix: string,
  topic: string,
): Promise<number> {
  const schema = currentSchemaOf(prefix, topic);
  if (schema === undefined) throw new Error(`${topic} is not a catalog topic with a value schema`);
  return serde.register(valueSubject(topic), schema);
}
