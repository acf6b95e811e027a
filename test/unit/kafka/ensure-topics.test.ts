import { describe, expect, it } from 'vitest';
import type { NewTopic, TopicAdmin } from '../../../runtime/kafka/admin.js';
import {
  ensureTopics,
  isMetadataLag,
  TopicConflictError,
  TopicsNotReadyError,
} from '../../../runtime/kafka/ensure-topics.js';
import { ERRORS, KafkaError } from '../../../runtime/kafka/rdkafka.js';
import { creationValue, type TopicSpec } from '../../../runtime/kafka/topic-spec.js';

/** An error as the librdkafka port reports a broker's error code. */
const brokerError = (code: number, message: string, context = 'create topic') =>
  new KafkaError(Object.assign(new Error(message), { code }), context);
const unknownTopic = () =>
  brokerError(ERRORS.ERR_UNKNOWN_TOPIC_OR_PART, 'Broker: Unknown topic or partition');

const spec = (name: string): TopicSpec => ({
  name,
  partitions: 2,
  replicationFactor: 1,
  configs: { 'cleanup.policy': 'delete', 'retention.ms': { atLeast: 1000 } },
});

/**
 * The admin port over an in-memory cluster. `onCreate` decides what one createTopics call does: by
 * default it creates every topic asked for; it may create some and throw, as a cluster whose metadata
 * lags behind many new partitions does.
 */
function fakeAdmin({
  onCreate = (request, create) => {
    for (const t of request) create(t.name);
  },
  leaderless = () => false,
}: {
  onCreate?: (request: readonly NewTopic[], create: (topic: string) => void, call: number) => void;
  leaderless?: (topic: string) => boolean;
} = {}) {
  const topics = new Map<string, Record<string, string>>();
  const creates: string[][] = [];
  const unused = async (): Promise<never> => {
    throw new Error('not used by ensureTopics');
  };
  const admin: TopicAdmin = {
    listTopics: async () => [...topics.keys()],
    createTopics: async (request) => {
      creates.push(request.map((t) => t.name));
      const create = (topic: string) => {
        if (topics.has(topic)) throw new Error(`${topic} created twice`);
        topics.set(topic, { ...request.find((t) => t.name === topic)!.configs });
      };
      onCreate(request, create, creates.length);
    },
    // As the port promises: topics that do not exist are left out.
    describeTopics: async (names) =>
      names
        .filter((name) => topics.has(name))
        .map((name) => {
          const leader = leaderless(name) ? -1 : 0;
          return {
            name,
            partitions: [0, 1].map((partition) => ({ partition, leader, replicas: [0], isr: [0] })),
          };
        }),
    topicConfigs: async (names) =>
      new Map(
        names.map((name) => {
          const configs = topics.get(name);
          if (!configs) throw unknownTopic();
          return [name, configs];
        }),
      ),
    deleteTopics: unused,
    brokers: async () => [{ id: 0, host: 'localhost', port: 9092 }],
    brokerConfigs: unused,
    watermarks: unused,
    offsetsForTime: unused,
    committedOffsets: unused,
    commitOffsets: unused,
  };
  return { admin, topics, creates };
}

const noWait = (delays: number[]) => ({
  retries: 4,
  sleep: async (ms: number) => {
    delays.push(ms);
  },
});

describe('ensureTopics while the cluster catches up with new topics', () => {
  it('looks again when a broker whose metadata lags leaves a created topic out of its answer', async () => {
    const specs = ['a', 'b'].map(spec);
    const { admin } = fakeAdmin();
    const describe = admin.describeTopics;
    let calls = 0;
    // Leaders seen for both, then one broker's answer still lacks "b": no error, just absent.
    admin.describeTopics = async (names) => {
      calls++;
      const found = await describe(names);
      return calls === 2 ? found.filter((t) => t.name !== 'b') : found;
    };
    const delays: number[] = [];

    const result = await ensureTopics(admin, specs, { creationRetry: noWait(delays) });

    expect(result.topics.map((t) => [t.name, t.action])).toEqual([
      ['a', 'created'],
      ['b', 'created'],
    ]);
    expect(delays).toHaveLength(1);
  });

  it('looks again after UNKNOWN_TOPIC_OR_PARTITION and creates only the topics still absent', async () => {
    const specs = ['a', 'b', 'c', 'd'].map(spec);
    const { admin, topics, creates } = fakeAdmin({
      onCreate: (request, create, call) => {
        // The first request creates half of the topics, then the broker asked does not know the rest yet.
        const asked = request.map((t) => t.name);
        for (const topic of call === 1 ? asked.slice(0, 2) : asked) create(topic);
        if (call === 1) throw unknownTopic();
      },
    });
    const delays: number[] = [];

    const result = await ensureTopics(admin, specs, { creationRetry: noWait(delays) });

    expect(result.changed).toBe(true);
    expect(result.topics.map((t) => [t.name, t.action])).toEqual([
      ['a', 'created'],
      ['b', 'created'],
      ['c', 'created'],
      ['d', 'created'],
    ]);
    expect(creates).toEqual([
      ['a', 'b', 'c', 'd'],
      ['c', 'd'],
    ]);
    expect(topics.get('d')).toEqual({
      'cleanup.policy': 'delete',
      'retention.ms': creationValue({ atLeast: 1000 }),
    });
    expect(delays).toHaveLength(1);
  });

  it('waits with growing, jittered pauses for topics that exist without a leader yet', async () => {
    let checks = 0;
    const { admin, creates } = fakeAdmin({ leaderless: (topic) => topic === 'b' && ++checks <= 3 });
    const delays: number[] = [];

    await ensureTopics(admin, [spec('a'), spec('b')], {
      creationRetry: { ...noWait(delays), initialDelayMs: 100, maxDelayMs: 10_000 },
    });

    // Created once: the topics existed after the first request, only their leaders were late.
    expect(creates).toEqual([['a', 'b']]);
    expect(delays).toHaveLength(3);
    delays.forEach((delay, i) => {
      expect(delay).toBeGreaterThanOrEqual(0.8 * 100 * 2 ** i);
      expect(delay).toBeLessThanOrEqual(1.2 * 100 * 2 ** i);
    });
  });

  it('gives up after its retries, naming the topics without a leader', async () => {
    const { admin } = fakeAdmin({ leaderless: (topic) => topic === 'b' });
    const delays: number[] = [];

    const attempt = ensureTopics(admin, [spec('a'), spec('b')], { creationRetry: noWait(delays) });

    await expect(attempt).rejects.toBeInstanceOf(TopicsNotReadyError);
    await expect(attempt).rejects.toMatchObject({ topics: ['b'] });
    expect(delays).toHaveLength(4);
  });

  it('fails at once on an error that does not come from lagging metadata', async () => {
    const { admin, creates } = fakeAdmin({
      onCreate: () => {
        throw brokerError(ERRORS.ERR_INVALID_REPLICATION_FACTOR, 'Broker: Invalid replication factor');
      },
    });
    const delays: number[] = [];

    const attempt = ensureTopics(admin, [spec('a')], { creationRetry: noWait(delays) });

    await expect(attempt).rejects.toMatchObject({ code: ERRORS.ERR_INVALID_REPLICATION_FACTOR });
    expect(creates).toHaveLength(1);
    expect(delays).toEqual([]);
  });
});

describe('ensureTopics on topics that exist', () => {
  it('verifies a topic that fits and creates nothing', async () => {
    const { admin, topics, creates } = fakeAdmin();
    topics.set('a', { 'cleanup.policy': 'delete', 'retention.ms': '-1' });

    const result = await ensureTopics(admin, [spec('a')]);

    expect(result).toEqual({
      changed: false,
      topics: [{ name: 'a', action: 'verified', partitions: 2, replicationFactor: 1 }],
    });
    expect(creates).toEqual([]);
  });

  it('stops on a conflicting setting before creating any missing topic, naming topic, setting, found and expected', async () => {
    const { admin, topics, creates } = fakeAdmin();
    topics.set('a', { 'cleanup.policy': 'compact', 'retention.ms': '500' });

    const error = await ensureTopics(admin, [spec('a'), spec('b')]).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(TopicConflictError);
    expect((error as TopicConflictError).conflicts).toEqual([
      { topic: 'a', setting: 'cleanup.policy', found: 'compact', expected: 'delete' },
      { topic: 'a', setting: 'retention.ms', found: '500', expected: 'at least 1000' },
    ]);
    expect((error as Error).message).toContain(
      'topic "a" setting "retention.ms": found 500, expected at least 1000',
    );
    expect(creates).toEqual([]);
    expect([...topics.keys()]).toEqual(['a']);
  });
});

describe('isMetadataLag', () => {
  it('recognises lagging metadata, also as the cause of another error', () => {
    expect(isMetadataLag(unknownTopic())).toBe(true);
    expect(isMetadataLag(brokerError(ERRORS.ERR_LEADER_NOT_AVAILABLE, 'Broker: Leader not available'))).toBe(
      true,
    );
    expect(isMetadataLag(brokerError(ERRORS.ERR__UNKNOWN_TOPIC, 'Local: Unknown topic'))).toBe(true);
    // A creation that did not finish within its timeout may have happened: look again.
    expect(isMetadataLag(brokerError(ERRORS.ERR_REQUEST_TIMED_OUT, 'Broker: Request timed out'))).toBe(true);
    expect(isMetadataLag(brokerError(ERRORS.ERR__TIMED_OUT, 'Local: Timed out'))).toBe(true);
    expect(isMetadataLag(new Error('gave up after 5 retries', { cause: unknownTopic() }))).toBe(true);
    expect(isMetadataLag(new TopicsNotReadyError(['a']))).toBe(true);
  });

  it('leaves every other error alone', () => {
    expect(
      isMetadataLag(brokerError(ERRORS.ERR_TOPIC_AUTHORIZATION_FAILED, 'Broker: Topic authorization failed')),
    ).toBe(false);
    expect(
      isMetadataLag(brokerError(ERRORS.ERR_INVALID_REPLICATION_FACTOR, 'Broker: Invalid replication factor')),
    ).toBe(false);
    expect(isMetadataLag(new TypeError('x is undefined'))).toBe(false);
    expect(isMetadataLag(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))).toBe(
      false,
    );
    expect(isMetadataLag('UNKNOWN_TOPIC_OR_PARTITION')).toBe(false);
  });
});
