// The processors' start-up check: an input and its changelog with different partition counts stop the
// start with one line (the real broker case: test/integration/scaling.test.ts).
import { describe, expect, it } from 'vitest';
import type { TopicAdmin } from '../../../runtime/kafka/admin.js';
import { assertCoPartitioned, PartitionCountMismatchError } from '../../../runtime/kafka/co-partitioning.js';

function adminWith(counts: Record<string, number>): TopicAdmin {
  return {
    describeTopics: async (names: readonly string[]) =>
      names
        .filter((name) => counts[name] !== undefined)
        .map((name) => ({
          name,
          partitions: Array.from({ length: counts[name]! }, (_, partition) => ({
            partition,
            leader: 1,
            replicas: [1],
            isr: [1],
          })),
        })),
  } as Partial<TopicAdmin> as TopicAdmin;
}

const pair = { input: 'webhooks.raw', changelog: 'webhooks.dedupe-changelog' };

describe('the co-partitioning check at start', () => {
  it('passes when an input and its changelog have as many partitions', async () => {
    await expect(
      assertCoPartitioned(
        adminWith({ 'webhooks.raw': 12, 'webhooks.dedupe-changelog': 12 }),
        'dedupe-router',
        [pair],
      ),
    ).resolves.toBeUndefined();
  });

  it('refuses in one line naming both topics, their counts and the safe path', async () => {
    const refusal = assertCoPartitioned(
      adminWith({ 'webhooks.raw': 24, 'webhooks.dedupe-changelog': 12 }),
      'dedupe-router',
      [pair],
    );
    await expect(refusal).rejects.toBeInstanceOf(PartitionCountMismatchError);
    const message = await refusal.catch((error: Error) => error.message);
    expect(message).not.toContain('\n');
    expect(message).toMatch(
      /^the dedupe-router refuses to start: webhooks\.raw has 24 partitions and its changelog webhooks\.dedupe-changelog has 12; .*docs\/scaling\.md\)$/,
    );
    // The CLI prints such an error as its one line and exits 1.
    expect(await refusal.catch((error: { userFacing?: boolean }) => error.userFacing)).toBe(true);
  });

  it('leaves a missing topic to the checks that need it', async () => {
    await expect(
      assertCoPartitioned(adminWith({ 'webhooks.raw': 3 }), 'dedupe-router', [pair]),
    ).resolves.toBeUndefined();
  });
});
