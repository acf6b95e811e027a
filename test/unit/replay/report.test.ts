import { describe, expect, it } from 'vitest';
import { emptyCounts } from '../../../tools/replay/bounded-topology.js';
import type { ReplayResult } from '../../../tools/replay/replay.js';
import { summary } from '../../../tools/replay/report.js';

function result(completed: boolean, resumed = false): ReplayResult {
  return {
    id: 'r1',
    completed,
    resumed,
    stages: [
      {
        stage: 'dedupe-router',
        appId: 'app',
        ranges: new Map([['webhooks.raw', [{ partition: 0, start: 0n, end: 10n }]]]),
        counts: { ...emptyCounts(), filtered: 4 },
      },
    ],
    topics: new Map(),
    triggers: ['UserAdded'],
    groups: [],
    internalTopics: [],
  } as unknown as ReplayResult;
}

describe('the replay summary', () => {
  it('says no record matched --trigger only once the run read its whole range', () => {
    expect(summary(result(true))).toContain('no record matched --trigger UserAdded');
    // Interrupted before it got to one: it cannot know (before, it said so all the same).
    expect(summary(result(false))).not.toContain('no record matched');
    expect(summary(result(false))).toContain('replay r1 interrupted');
    // Resumed after its router had read everything (interrupted in the tables): it read nothing this time.
    expect(summary(result(true, true))).not.toContain('no record matched');
  });
});
