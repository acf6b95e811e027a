import { describe, expect, it } from 'vitest';
import {
  checkDedupeRetention,
  retentionFindings,
} from '../../../../processors/dedupe-router/retention-check.js';
import { ConfigError } from '../../../../runtime/config.js';
import type { TopicAdmin } from '../../../../runtime/kafka/admin.js';

const DAY = 86_400_000;
const changelogTopic = 'webhooks.dedupe-changelog';
const changelog = (retentionMs: number, policy = 'compact,delete') => ({
  'cleanup.policy': policy,
  'retention.ms': String(retentionMs),
});
const broker = (offsetsRetentionMinutes: number) => ({
  'offsets.retention.minutes': String(offsetsRetentionMinutes),
});

describe("the router's retention check", () => {
  it('passes a changelog kept longer than the window and offsets kept as long', () => {
    expect(
      retentionFindings({
        windowMs: 7 * DAY,
        changelogTopic,
        changelogConfigs: changelog(8 * DAY),
        brokerConfigs: broker(10_080),
      }),
    ).toEqual({ warnings: [] });
  });

  it('refuses a window longer than the changelog keeps, naming both', () => {
    const { refusal } = retentionFindings({
      windowMs: 14 * DAY,
      changelogTopic,
      changelogConfigs: changelog(8 * DAY),
      brokerConfigs: broker(30 * 1440),
    });
    expect(refusal).toMatch(/^DEDUPE_WINDOW 14d is longer than webhooks\.dedupe-changelog keeps .*8d/);
  });

  it('accepts any window when the changelog keeps forever or only compacts', () => {
    for (const configs of [changelog(-1), changelog(DAY, 'compact')]) {
      const findings = retentionFindings({
        windowMs: 30 * DAY,
        changelogTopic,
        changelogConfigs: configs,
        brokerConfigs: broker(60 * 1440),
      });
      expect(findings.refusal).toBeUndefined();
    }
  });

  it('warns when the brokers forget committed offsets before the window ends', () => {
    const { refusal, warnings } = retentionFindings({
      windowMs: 14 * DAY,
      changelogTopic,
      changelogConfigs: changelog(15 * DAY),
      brokerConfigs: broker(10_080),
    });
    expect(refusal).toBeUndefined();
    expect(warnings).toEqual([expect.stringMatching(/offsets\.retention\.minutes 10080.*DEDUPE_WINDOW 14d/)]);
  });

  it('says nothing of a changelog that does not exist yet', () => {
    expect(
      retentionFindings({
        windowMs: 7 * DAY,
        changelogTopic,
        changelogConfigs: undefined,
        brokerConfigs: undefined,
      }),
    ).toEqual({ warnings: [] });
  });

  it('stops the router with a ConfigError on a refusal', async () => {
    const admin = {
      describeTopics: async () => [{ name: changelogTopic, partitions: [] }],
      topicConfigs: async () => new Map([[changelogTopic, changelog(3 * DAY)]]),
      brokers: async () => [{ id: 1, host: 'localhost', port: 9092 }],
      brokerConfigs: async () => broker(10_080),
    } as unknown as TopicAdmin;
    const warnings: string[] = [];
    await expect(
      checkDedupeRetention(admin, { windowMs: 7 * DAY, changelogTopic, warn: (m) => warnings.push(m) }),
    ).rejects.toThrow(ConfigError);
  });
});
