import { describe, expect, it } from 'vitest';
import {
  compareTopic,
  creationValue,
  formatConflicts,
  satisfies,
  stateFromSpec,
  type TopicSpec,
} from '../../../runtime/kafka/topic-spec.js';

const spec: TopicSpec = {
  name: 'orders',
  partitions: 12,
  replicationFactor: 3,
  configs: {
    'cleanup.policy': 'compact,delete',
    'retention.ms': { atLeast: 691_200_000 },
    'segment.ms': { atMost: 21_600_000 },
    'unclean.leader.election.enable': 'false',
  },
};

const fitting = {
  name: 'orders',
  partitions: 12,
  replicationFactor: 3,
  configs: {
    'cleanup.policy': 'delete,compact',
    'retention.ms': '691200000',
    'segment.ms': '3600000',
    'unclean.leader.election.enable': 'false',
    'max.message.bytes': '1048588',
  },
};

describe('comparing a found topic with its spec', () => {
  it('finds nothing wrong with a topic that fits, whatever the order of a list setting', () => {
    expect(compareTopic(spec, fitting)).toEqual([]);
  });

  it('names the topic, the setting, the found and the expected value of each conflict', () => {
    const found = {
      ...fitting,
      configs: { ...fitting.configs, 'cleanup.policy': 'delete', 'segment.ms': '604800000' },
    };
    expect(compareTopic(spec, found)).toEqual([
      { topic: 'orders', setting: 'cleanup.policy', found: 'delete', expected: 'compact,delete' },
      { topic: 'orders', setting: 'segment.ms', found: '604800000', expected: 'at most 21600000' },
    ]);
  });

  it('reports a different partition count, more or fewer', () => {
    for (const partitions of [6, 24]) {
      const [conflict] = compareTopic(spec, { ...fitting, partitions });
      expect(conflict).toEqual({
        topic: 'orders',
        setting: 'partitions',
        found: String(partitions),
        expected: '12',
      });
    }
  });

  it('accepts a higher replication factor and reports a lower one', () => {
    expect(compareTopic(spec, { ...fitting, replicationFactor: 5 })).toEqual([]);
    expect(compareTopic(spec, { ...fitting, replicationFactor: 1 })).toEqual([
      { topic: 'orders', setting: 'replication factor', found: '1', expected: 'at least 3' },
    ]);
  });

  it('reports a setting the broker did not describe', () => {
    const { 'segment.ms': _, ...configs } = fitting.configs;
    expect(compareTopic(spec, { ...fitting, configs })).toEqual([
      {
        topic: 'orders',
        setting: 'segment.ms',
        found: '(not reported by the broker)',
        expected: 'at most 21600000',
      },
    ]);
  });
});

describe('one setting against its expectation', () => {
  it('compares numbers as numbers and words without case', () => {
    expect(satisfies('retention.ms', '-1', '-1')).toBe(true);
    expect(satisfies('min.insync.replicas', '02', '2')).toBe(true);
    expect(satisfies('unclean.leader.election.enable', 'FALSE', 'false')).toBe(true);
    expect(satisfies('unclean.leader.election.enable', 'true', 'false')).toBe(false);
  });

  it('treats -1 as unlimited for retention, and only there', () => {
    expect(satisfies('retention.ms', '-1', { atLeast: 1000 })).toBe(true);
    expect(satisfies('retention.bytes', '-1', { atLeast: 1000 })).toBe(true);
    expect(satisfies('delete.retention.ms', '-1', { atLeast: 1000 })).toBe(false);
    expect(satisfies('retention.ms', '999', { atLeast: 1000 })).toBe(false);
  });

  it('never accepts a value that is not a number against a bound', () => {
    expect(satisfies('segment.ms', 'soon', { atMost: 10 })).toBe(false);
    expect(satisfies('segment.ms', undefined, { atMost: 10 })).toBe(false);
  });
});

describe('creating from a spec', () => {
  it('sets exact values as given and bounds at the bound', () => {
    expect(creationValue('compact')).toBe('compact');
    expect(creationValue({ atLeast: 5 })).toBe('5');
    expect(creationValue({ atMost: 7 })).toBe('7');
  });

  it('a topic created from its spec fits its spec', () => {
    expect(compareTopic(spec, stateFromSpec(spec))).toEqual([]);
  });
});

describe('the conflict message', () => {
  it('is one line naming every conflict', () => {
    const message = formatConflicts([
      { topic: 'a', setting: 'retention.ms', found: '604800000', expected: '-1' },
      { topic: 'b', setting: 'partitions', found: '6', expected: '12' },
    ]);
    expect(message).not.toContain('\n');
    expect(message).toContain('topic "a" setting "retention.ms": found 604800000, expected -1');
    expect(message).toContain('topic "b" setting "partitions": found 6, expected 12');
    expect(message).toMatch(/partition count is fixed once/);
    // The safe path, instead of adding partitions.
    expect(message).toMatch(/new topic set with more partitions .*hookledger repartition, docs\/scaling\.md/);
  });
});
