// The side-by-side topics of a replay: `<topic>.replay-<id>`, created with their live twins' settings.
import type { Config } from '../../runtime/config.js';
import { type TopicAdmin, topicStates } from '../../runtime/kafka/admin.js';
import { ensureTopics } from '../../runtime/kafka/ensure-topics.js';
import { resourceId } from '../../runtime/kafka/resource-ids.js';
import type { TopicSpec } from '../../runtime/kafka/topic-spec.js';
import type { Logger } from '../../runtime/log.js';
import { loadSchema } from '../../schemas/schema-files.js';
import type { Serde } from '../../schemas/serde.js';
import { topicCatalog, topicNames, valueSubject } from '../../schemas/topics.js';

/** A replay id: letters, digits, `.`, `_`, `-` (it becomes part of topic, group and transactional ids). */
export const REPLAY_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,59}$/;

/** `20261122-160501`: the UTC time the replay started, to the second. */
export function defaultReplayId(now = new Date()): string {
  return now
    .toISOString()
    .replace(/\.\d+Z$/, '')
    .replace(/[-:]/g, '')
    .replace('T', '-');
}

export function replayTopic(topic: string, id: string): string {
  return `${topic}.replay-${id}`;
}

/** Consumer groups (and transactional id prefixes) of a replay: never a live app's. */
export function replayAppId(prefix: string, id: string, stage: string): string {
  return resourceId(prefix, `replay-${id}-${stage}`);
}

export class MissingLiveTopicError extends Error {
  override name = 'MissingLiveTopicError';
}

/**
 * The specs of the replay copies of `liveTopics`: the catalog's settings with each live twin's
 * partition count and replication factor. One exception: the dedupe changelog copy is compacted
 * only (no time retention): it goes away with the replay, and nothing in it need ever age out while
 * the replay may still be resumed (its records are stamped when written, as the live changelog's are:
 * processors/dedupe-router/dedupe-store.ts). Compacted, the copy keeps one decision per id.
 */
export async function replaySpecs(
  admin: TopicAdmin,
  config: Config,
  id: string,
  liveTopics: readonly string[],
): Promise<(TopicSpec & { live: string; valueSchema: string | undefined })[]> {
  const names = topicNames(config.TOPIC_PREFIX);
  const catalog = new Map(
    topicCatalog({
      prefix: config.TOPIC_PREFIX,
      bodyLimit: config.INGEST_BODY_LIMIT,
      dedupeWindowMs: config.DEDUPE_WINDOW,
      partitions: 1,
      replicationFactor: 1,
    }).map((t) => [t.name, t]),
  );
  const found = await topicStates(admin, liveTopics);
  return liveTopics.map((live) => {
    const spec = catalog.get(live);
    const state = found.get(live);
    if (spec === undefined) throw new Error(`${live} is not a catalog topic`);
    if (state === undefined)
      throw new MissingLiveTopicError(`topic ${live} does not exist: run \`hookledger topics\` first`);
    const configs = { ...spec.configs };
    if (live === names.dedupeChangelog) {
      configs['cleanup.policy'] = 'compact';
      delete configs['retention.ms'];
    }
    return {
      live,
      name: replayTopic(live, id),
      partitions: state.partitions,
      replicationFactor: state.replicationFactor,
      configs,
      valueSchema: spec.valueSchema,
    };
  });
}

/**
 * Creates (or verifies, on a resumed run) the replay topics and registers their value subjects. With
 * `register` false (SCHEMA_REGISTRY_AUTO_REGISTER=false) nothing is registered: a replay topic's records
 * carry the id of the same schema under its live topic's subject (an id names the schema, whatever the
 * subject), looked up.
 */
export async function ensureReplayTopics(
  admin: TopicAdmin,
  serde: Serde,
  specs: readonly (TopicSpec & { live: string; valueSchema: string | undefined })[],
  logger: Logger,
  register = true,
): Promise<Map<string, number>> {
  await ensureTopics(admin, specs, { logger });
  const schemaIds = new Map<string, number>();
  for (const spec of specs) {
    if (spec.valueSchema === undefined) continue;
    const subject = valueSubject(register ? spec.name : spec.live);
    schemaIds.set(spec.name, await serde.register(subject, loadSchema(spec.valueSchema)));
  }
  return schemaIds;
}
