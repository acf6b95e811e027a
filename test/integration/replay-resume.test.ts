// hookledger replay interrupted half-way and run again with the same id: every delivery once, within the
// first run's bounds, and the first run's trigger filter applied to both runs (given again or not).
import { describe, expect, it } from 'vitest';
import { ReplayConflictError, runReplay } from '../../tools/replay/replay.js';
import { replayTopic } from '../../tools/replay/topics.js';
import { testStack } from '../helpers/stack.js';
import { envelopeFor } from '../unit/processors/fixtures.js';
import { ProcessorsHarness, quietLogger, randomPrefix } from './processors-harness.js';

function delivery(i: number, trigger: 'UserAdded' | 'AccountAdded') {
  const entity = trigger === 'UserAdded' ? 'User' : 'Account';
  return envelopeFor(
    {
      webhook: { id: `wh_${i}`, trigger, date: '2026-11-20T12:00:00Z' },
      query: { variables: { id: `id_${i}` } },
      data: { [`get${entity}`]: { __typename: entity, id: `id_${i}` } },
    },
    { trigger, webhookDate: '2026-11-20T12:00:00Z', receivedAt: Date.parse('2026-11-20T12:00:00Z') + i },
  );
}

describe('an interrupted replay run again with the same id', () => {
  it('writes every delivery of its bounds once, and nothing past them', async () => {
    const harness = new ProcessorsHarness(testStack(), randomPrefix('replay-resume'));
    await harness.setUp();
    const count = 4000;
    const envelopes = Array.from({ length: count }, (_, i) =>
      delivery(i, i % 10 === 0 ? 'AccountAdded' : 'UserAdded'),
    );
    // A retry of the first 100: duplicates to drop, some in each run.
    await harness.produceRaw([...envelopes, ...envelopes.slice(0, 100)]);
    const config = harness.config();
    const base = {
      config,
      logger: quietLogger(),
      id: 'resume',
      stage: 'dedupe-router' as const,
      triggers: ['UserAdded'],
      pollMs: 100,
      // Small fetches and transactions: many short ones, so the interruption lands half-way.
      maxBytesPerPartition: 16_384,
      commitMaxRecords: 200,
    };

    const controller = new AbortController();
    const first = await runReplay({
      ...base,
      request: {},
      signal: controller.signal,
      onProgress: (p) => {
        if (p.done > 0n && p.done < p.total) controller.abort();
      },
    });
    expect(first.completed).toBe(false);
    // Written after the first run began: past its bounds, so never replayed by this id.
    await harness.produceRaw([delivery(count, 'UserAdded')]);

    // Another filter than the first run's is refused; none (as the printed resume command has it) takes the
    // first run's. Before, a resume without --trigger routed every trigger of what was left.
    await expect(runReplay({ ...base, triggers: ['AccountAdded'], request: {} })).rejects.toThrow(
      new ReplayConflictError(
        'replay took only --trigger UserAdded in its first run: run it again with the same --trigger (or none), or use a new --id',
      ),
    );
    const second = await runReplay({ ...base, triggers: undefined, request: {} });
    expect(second.completed).toBe(true);
    expect(second.resumed).toBe(true);
    expect(second.triggers).toEqual(['UserAdded']);
    const read = first.stages[0]!.counts.read + second.stages[0]!.counts.read;
    expect(read).toBe(count - count / 10 + 90);

    const users = await harness.read<{ webhookId: string }>(
      replayTopic(harness.names.entity('user'), 'resume'),
    );
    const ids = users.map((r) => r.value!.webhookId);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toHaveLength(count - count / 10);
    expect(ids).not.toContain(`wh_${count}`);
    expect(await harness.read(replayTopic(harness.names.entity('account'), 'resume'))).toHaveLength(0);
  });
});
