// The schema id a writer labels its records with: the id of the schema its own code writes, never the
// subject's newest version. Bytes written from this version's schema (the router's fast path writes Avro
// by hand in its layout) read as garbage, or not at all, under another version's id: during a rolling
// upgrade, a rollback, or a deployment started before the schemas' Job, the newest version under the
// subject is someone else's.

import { loadSchema } from './schema-files.js';
import type { Serde } from './serde.js';
import { catalogSubjects, valueSubject } from './topics.js';

/**
 * The id of this code's value schema for `topic` (a catalog topic, `<prefix><name>`), registered as
 * `hookledger topics` registers it (idempotent), or only looked up with SCHEMA_REGISTRY_AUTO_REGISTER=false.
 */
export async function ownSchemaId(
  serde: Pick<Serde, 'register'>,
  prefix: string,
  topic: string,
): Promise<number> {
  const subject = valueSubject(topic);
  const entry = catalogSubjects(prefix).find((s) => s.subject === subject);
  if (entry === undefined) throw new Error(`${topic} is not a catalog topic with a value schema`);
  return serde.register(subject, loadSchema(entry.schema));
}
