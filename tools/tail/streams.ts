// `hookledger tail <stream>`: a stream is a topic's logical name (prefixed with TOPIC_PREFIX) or a full name.
import { topicCatalog } from '../../schemas/topics.js';

/** The logical names of every hookledger topic: webhooks.raw, entity.user, entity.user.latest, … */
export function logicalStreams(): string[] {
  // Sizes and counts do not change the names.
  return topicCatalog({
    prefix: '',
    bodyLimit: 1,
    dedupeWindowMs: 1,
    partitions: 1,
    replicationFactor: 1,
  }).map((topic) => topic.name);
}

/** The topic to read: the logical name with the prefix, or the name as given when it is not a logical one. */
export function resolveTopic(stream: string, prefix: string): string {
  return logicalStreams().includes(stream) ? `${prefix}${stream}` : stream;
}
