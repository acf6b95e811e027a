// Consumer group and transactional ids: every one hookledger uses starts with `<TOPIC_PREFIX>hookledger-`,
// the topics with `<TOPIC_PREFIX>`, so a Kafka admin grants one set of PREFIXED ACLs (docs/security.md).

/** `<prefix>hookledger-<name>`: a consumer group, a transactional id, or the stem of one. */
export function resourceId(prefix: string, name: string): string {
  return `${prefix}hookledger-${name}`;
}

/**
 * The group.id of the group-less reader (restore, tail, replay's bounds, redrive, quarantine). It assigns
 * partitions and never commits, so it never joins; librdkafka insists on one all the same, and a broker
 * with ACLs checks the reader's right to it on each fetch of committed offsets it never makes, so it
 * carries the prefix too.
 */
export function readerGroupId(prefix: string): string {
  return resourceId(prefix, 'read-to-end');
}
