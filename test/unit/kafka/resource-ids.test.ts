// One set of PREFIXED ACLs covers hookledger: every consumer group and transactional id it uses starts with
// the topic prefix and "hookledger-".
import { describe, expect, it } from 'vitest';
import { dedupeRouterAppId } from '../../../processors/dedupe-router/main.js';
import { tablesAppId } from '../../../processors/tables/main.js';
import { readerGroupId } from '../../../runtime/kafka/resource-ids.js';
import { promoteTransactionalId } from '../../../tools/quarantine/promote.js';
import { repartitionAppId } from '../../../tools/repartition/repartition.js';
import { replayAppId } from '../../../tools/replay/topics.js';

describe('consumer group and transactional ids', () => {
  const prefix = 'acme.prod.';
  const ids = {
    'the router group (its transactional ids add the instance id)': dedupeRouterAppId(prefix),
    'the tables group': tablesAppId(prefix),
    "a replay's groups": replayAppId(prefix, '20261126-0900', 'dedupe-router'),
    "a replay's bounds": replayAppId(prefix, '20261126-0900', 'bounds'),
    "quarantine promote's transactional id": promoteTransactionalId(prefix, 'energy'),
    "the group-less reader's group.id": readerGroupId(prefix),
    "repartition's group (its transactional ids add the instance id)": repartitionAppId(prefix, 'v2.'),
  };

  it.each(Object.entries(ids))('%s starts with the topic prefix and hookledger-', (_, id) => {
    expect(id.startsWith(`${prefix}hookledger-`)).toBe(true);
  });

  it('names the source after the stem, so two prefixes never share one', () => {
    expect(promoteTransactionalId('a.', 'b')).toBe('a.hookledger-promote-b');
    expect(readerGroupId('')).toBe('hookledger-read-to-end');
  });
});
