// The start-up check that a stateful stage's input and its changelog still have the same partition
// count: the store of input partition p is restored from changelog partition p, so partitions added to
// either one would hand a retried id to a store that never saw it (and it would pass as new).
import type { TopicAdmin } from './admin.js';

/** An input topic and the changelog its stores are restored from, partition for partition. */
export interface CoPartitionedPair {
  input: string;
  changelog: string;
}

/** The partition counts differ: one line, and the command exits 1. */
export class PartitionCountMismatchError extends Error {
  override name = 'PartitionCountMismatchError';
  readonly userFacing = true;
}

/**
 * Throws PartitionCountMismatchError naming the first pair whose counts differ. Topics that do not exist
 * are left to the checks that need them (the stage's own start says what is missing).
 */
export async function assertCoPartitioned(
  admin: TopicAdmin,
  stage: string,
  pairs: readonly CoPartitionedPair[],
): Promise<void> {
  const described = await admin.describeTopics(pairs.flatMap((p) => [p.input, p.changelog]));
  const counts = new Map(described.map((t) => [t.name, t.partitions.length]));
  for (const { input, changelog } of pairs) {
    const inputs = counts.get(input);
    const changelogs = counts.get(changelog);
    if (inputs === undefined || changelogs === undefined || inputs === changelogs) continue;
    throw new PartitionCountMismatchError(
      `the ${stage} refuses to start: ${input} has ${inputs} partitions and its changelog ${changelog} has ${changelogs}; ` +
        'partitions were added to one of them, and a retried webhook id would reach a store that never saw it. ' +
        'Scale out with a new topic set instead (hookledger repartition, docs/scaling.md)',
    );
  }
}
