// replay --trigger: a name the contract does not list is warned about (not refused), and a filter that let
// nothing through is said so in the summary.
import { describe, expect, it } from 'vitest';
import { CONTRACT_TRIGGERS } from '../../../processors/dedupe-router/trigger-label.js';
import { emptyCounts } from '../../../tools/replay/bounded-topology.js';
import type { ReplayResult } from '../../../tools/replay/replay.js';
import { summary } from '../../../tools/replay/report.js';
import { unknownTriggerLines } from '../../../tools/replay/trigger-filter.js';

function result(read: number, filtered: number, triggers?: readonly string[]): ReplayResult {
  return {
    id: 'r1',
    completed: true,
    resumed: false,
    stages: [
      {
        stage: 'dedupe-router',
        appId: 'app',
        ranges: new Map([['webhooks.raw', [{ partition: 0, start: 0n, end: BigInt(read + filtered) }]]]),
        counts: { ...emptyCounts(), read, filtered },
      },
    ],
    topics: new Map(),
    ...(triggers === undefined ? {} : { triggers }),
    groups: [],
    internalTopics: [],
  };
}

describe('replay --trigger', () => {
  it('warns about nothing for the contract’s triggers', () => {
    expect(unknownTriggerLines(CONTRACT_TRIGGERS)).toEqual([]);
  });

  it('warns about a name in another case, suggesting the contract’s', () => {
    expect(unknownTriggerLines(['UserAdded', 'useradded'])).toEqual([
      `--trigger useradded is not a trigger of the platform's contract (did you mean UserAdded?): only deliveries whose webhook.trigger is exactly "useradded" are replayed`,
    ]);
  });

  it('warns about a name the contract does not have, listing the ones it has', () => {
    const [line] = unknownTriggerLines(['PaymentAdded']);
    expect(line).toContain('--trigger PaymentAdded is not a trigger of the platform');
    for (const trigger of CONTRACT_TRIGGERS) expect(line).toContain(trigger);
  });

  it('says in the summary when no record matched the filter', () => {
    expect(summary(result(0, 12, ['Nope']))).toContain(
      'no record matched --trigger Nope: nothing replayed (12 other record(s) in range skipped)',
    );
    expect(summary(result(3, 9, ['UserAdded']))).not.toContain('no record matched');
    expect(summary(result(0, 0))).not.toContain('no record matched');
  });
});
