import kafkajs, { type Admin } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { ensureTopics, isMetadataLag, TopicsNotReadyError } from '../../../runtime/kafka/ensure-topics.js';
import { creationValue, type TopicSpec } from '../../../runtime/kafka/topic-spec.js';

const { KafkaJSProtocolError, KafkaJSNumberOfRetriesExceeded } = kafkajs;

/** A protocol error as kafkajs builds it from a broker's error code. */
const protocolError = (type: string, code: number) =>
  new KafkaJSProtocolError(Object.assign(new Error(type), { type, code, retriable: true }));
const unknownTopic = () => protocolError('UNKNOWN_TOPIC_OR_PARTITION', 3);

const spec = (name: string): TopicSpec => ({
  name,
  partitions: 2,
  replicationFactor: 1,
  configs: { 'cleanup.policy': 'delete', 'retention.ms': { atLeast: 1000 } },
});

interface CreateRequest {
  topics: { topic: string; configEntries: { name: string; value: string }[] }[];
}

/**
 * An admin over an in-memory cluster. `onCreate` decides what one createTopics call does: by default
 * it creates every topic asked for; it may create some and throw, as kafkajs does when the metadata
 * of many new partitions lags.
 */
function fakeAdmin({
  onCreate = (request, create) => {
    for (const t of request.topics) create(t.topic);
  },
  leaderless = () => false,
}: {
  onCreate?: (request: CreateRequest, create: (topic: string) => void, call: number) => void;
  leaderless?: (topic: string) => boolean;
} = {}) {
  const topics = new Map<string, Record<string, string>>();
  const creates: string[][] = [];
  const admin = {
    listTopics: async () => [...topics.keys()],
    createTopics: async (request: CreateRequest) => {
      creates.push(request.topics.map((t) => t.topic));
      const create = (topic: string) => {
        if (topics.has(topic)) throw new Error(`${topic} created twice`);
        const entries = request.topics.find((t) => t.topic === topic)!.configEntries;
        topics.set(topic, Object.fromEntries(entries.map((e) => [e.name, e.value])));
      };
      onCreate(request, create, creates.length);
      return true;
    },
    fetchTopicMetadata: async ({ topics: names }: { topics: string[] }) => ({
      topics: names.map((name) => {
        if (!topics.has(name)) throw unknownTopic();
        const leader = leaderless(name) ? -1 : 0;
        return { name, partitions: [0, 1].map((partitionId) => ({ partitionId, leader, replicas: [0] })) };
      }),
    }),
    describeConfigs: async ({ resources }: { resources: { name: string }[] }) => ({
      resources: resources.map(({ name }) => ({
        resourceName: name,
        configEntries: Object.entries(topics.get(name)!).map(([configName, configValue]) => ({
          configName,
          configValue,
        })),
      })),
    }),
  };
  return { admin: admin as unknown as Admin, topics, creates };
}

const noWait = (delays: number[]) => ({
  retries: 4,
  sleep: async (ms: number) => {
    delays.push(ms);
  },
});

describe('ensureTopics while the cluster catches up with new topics', () => {
  it('looks again after UNKNOWN_TOPIC_OR_PARTITION and creates only the topics still absent', async () => {
    const specs = ['a', 'b', 'c', 'd'].map(spec);
    const { admin, topics, creates } = fakeAdmin({
      onCreate: (request, create, call) => {
        // The first request creates half of the topics, then kafkajs gives up waiting for leaders.
        const asked = request.topics.map((t) => t.topic);
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
        throw protocolError('INVALID_REPLICATION_FACTOR', 38);
      },
    });
    const delays: number[] = [];

    const attempt = ensureTopics(admin, [spec('a')], { creationRetry: noWait(delays) });

    await expect(attempt).rejects.toMatchObject({ type: 'INVALID_REPLICATION_FACTOR' });
    expect(creates).toHaveLength(1);
    expect(delays).toEqual([]);
  });
});

describe('isMetadataLag', () => {
  it("recognises lagging metadata, also inside kafkajs's own retry errors", () => {
    expect(isMetadataLag(unknownTopic())).toBe(true);
    expect(isMetadataLag(protocolError('LEADER_NOT_AVAILABLE', 5))).toBe(true);
    // As kafkajs's retrier gives up: the broker's error is the cause (not in kafkajs's typings).
    const exceeded = new KafkaJSNumberOfRetriesExceeded(unknownTopic(), {
      retryCount: 5,
      retryTime: 900,
      cause: unknownTopic(),
    } as ConstructorParameters<typeof KafkaJSNumberOfRetriesExceeded>[1]);
    expect(isMetadataLag(exceeded)).toBe(true);
    expect(
      isMetadataLag(
        Object.assign(new Error('Timed out while waiting for topic leaders'), { name: 'KafkaJSTimeout' }),
      ),
    ).toBe(true);
  });

  it('leaves every other error alone', () => {
    expect(isMetadataLag(protocolError('TOPIC_AUTHORIZATION_FAILED', 29))).toBe(false);
    expect(isMetadataLag(new TypeError('x is undefined'))).toBe(false);
    expect(isMetadataLag('UNKNOWN_TOPIC_OR_PARTITION')).toBe(false);
  });
});
