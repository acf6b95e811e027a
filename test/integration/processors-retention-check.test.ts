// The router's start-up check against the real broker's configuration: a dedupe window longer than the
// changelog keeps is refused before the router reads a record; offsets kept shorter than it are warned.
import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { afterAll, describe, expect, it } from 'vitest';
import { startDedupeRouter } from '../../processors/dedupe-router/main.js';
import { checkDedupeRetention } from '../../processors/dedupe-router/retention-check.js';
import { ConfigError, loadConfig } from '../../runtime/config.js';
import { withAdmin } from '../../runtime/kafka/admin.js';
import { topicNames } from '../../schemas/topics.js';
import { createTestTopic, deleteTestTopics, testSettings } from '../helpers/rdkafka-io.js';
import { testStack } from '../helpers/stack.js';

const DAY = 86_400_000;

describe("the router's retention check on a real broker", () => {
  const stack = testStack();
  const settings = testSettings(stack.brokers);
  const prefix = `retention-${randomUUID().slice(0, 8)}.`;
  const changelog = topicNames(prefix).dedupeChangelog;
  afterAll(() => deleteTestTopics(settings, [changelog]));

  it('refuses to start a router whose window is longer than its changelog keeps', async () => {
    await createTestTopic(settings, changelog, 1, {
      'cleanup.policy': 'compact,delete',
      'retention.ms': String(4 * DAY),
    });
    const config = loadConfig({
      KAFKA_BROKERS: stack.brokers.join(','),
      SCHEMA_REGISTRY_URL: stack.registryUrl,
      TOPIC_PREFIX: prefix,
      DEDUPE_WINDOW: '7d',
    });
    const started = startDedupeRouter({
      config,
      logger: pino({ level: 'silent' }),
      registry: new Registry(),
    });
    await expect(started).rejects.toThrow(ConfigError);
    await expect(started).rejects.toThrow(/DEDUPE_WINDOW 7d is longer than .*dedupe-changelog keeps/);
  });

  it('warns, without refusing, when the broker forgets offsets before the window ends', async () => {
    const warnings: string[] = [];
    // The broker's default offsets.retention.minutes is 7 days; the changelog keeps 4 days.
    await withAdmin(settings, (admin) =>
      checkDedupeRetention(admin, {
        windowMs: 3 * DAY,
        changelogTopic: changelog,
        warn: (m) => warnings.push(m),
      }),
    );
    expect(warnings).toEqual([]);
    await expect(
      withAdmin(settings, (admin) =>
        checkDedupeRetention(admin, {
          windowMs: 8 * DAY,
          changelogTopic: changelog,
          warn: (m) => warnings.push(m),
        }),
      ),
    ).rejects.toThrow(ConfigError);
    expect(warnings).toEqual([expect.stringMatching(/offsets\.retention\.minutes 10080/)]);
  });
});
