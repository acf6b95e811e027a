// The topics a benchmark creates: the product's catalog under the run's prefix, one replica each (the
// figures are about the clients, and one replica is what a single local broker can hold).
import { type CatalogTopic, topicCatalog } from '../../schemas/topics.js';

export function benchTopicCatalog(prefix: string, partitions: number): CatalogTopic[] {
  return topicCatalog({
    prefix,
    bodyLimit: 1_048_576,
    dedupeWindowMs: 7 * 86_400_000,
    partitions,
    replicationFactor: 1,
  });
}
