// The router's start-up check that Kafka keeps what the dedupe window relies on. The window remembers
// an id for DEDUPE_WINDOW; the changelog is where that memory survives a restart or a rebalance, so a
// changelog that deletes records sooner forgets ids early and lets the platform's retries through.
import { ConfigError } from '../../runtime/config.js';
import { formatDuration } from '../../runtime/duration.js';
import type { TopicAdmin } from '../../runtime/kafka/admin.js';

export interface RetentionFindings {
  /** Why the router must not start: the changelog keeps less than the window. */
  refusal?: string;
  /** Worth knowing, not a reason to stop. */
  warnings: string[];
}

/** Broker default for offsets.retention.minutes since Kafka 2.0 (KIP-186): 7 days. */
const DEFAULT_OFFSETS_RETENTION_MINUTES = 10_080;

/**
 * What the changelog's and the broker's settings mean for a window of `windowMs`. Pure: the configs are
 * the effective ones (broker defaults included), as DescribeConfigs reports them.
 */
export function retentionFindings({
  windowMs,
  changelogTopic,
  changelogConfigs,
  brokerConfigs,
}: {
  windowMs: number;
  changelogTopic: string;
  changelogConfigs: Readonly<Record<string, string>> | undefined;
  brokerConfigs: Readonly<Record<string, string>> | undefined;
}): RetentionFindings {
  const warnings: string[] = [];
  let refusal: string | undefined;
  const window = formatDuration(windowMs);
  const retention = Number(changelogConfigs?.['retention.ms']);
  const deletes = (changelogConfigs?.['cleanup.policy'] ?? '').split(',').includes('delete');
  if (changelogConfigs !== undefined && deletes && retention >= 0 && retention < windowMs) {
    refusal =
      `DEDUPE_WINDOW ${window} is longer than ${changelogTopic} keeps its records ` +
      `(retention.ms ${retention} = ${formatDuration(retention)}): ids would be forgotten early after a ` +
      "restart; shorten the window or raise the topic's retention.ms (`hookledger topics` says by how much)";
  }
  const minutes = Number(brokerConfigs?.['offsets.retention.minutes'] ?? DEFAULT_OFFSETS_RETENTION_MINUTES);
  if (brokerConfigs !== undefined && Number.isFinite(minutes) && minutes * 60_000 < windowMs) {
    warnings.push(
      `the brokers keep a consumer group's committed offsets for ${formatDuration(minutes * 60_000)} ` +
        `(offsets.retention.minutes ${minutes}), less than DEDUPE_WINDOW ${window}: if the router is ` +
        'stopped that long, its group starts again from the earliest raw record and re-reads history',
    );
  }
  return { ...(refusal === undefined ? {} : { refusal }), warnings };
}

/**
 * Reads the changelog's and one broker's configuration and applies retentionFindings: throws a
 * ConfigError (one line, the process stops) on a refusal, warns otherwise. A changelog that does not
 * exist yet is `hookledger topics`' business, not a refusal.
 */
export async function checkDedupeRetention(
  admin: TopicAdmin,
  options: { windowMs: number; changelogTopic: string; warn: (message: string) => void },
): Promise<void> {
  const { windowMs, changelogTopic, warn } = options;
  const exists = (await admin.describeTopics([changelogTopic])).length > 0;
  const changelogConfigs = exists
    ? (await admin.topicConfigs([changelogTopic])).get(changelogTopic)
    : undefined;
  const [broker] = await admin.brokers();
  const brokerConfigs = broker === undefined ? undefined : await admin.brokerConfigs(broker.id);
  const findings = retentionFindings({ windowMs, changelogTopic, changelogConfigs, brokerConfigs });
  for (const warning of findings.warnings) warn(warning);
  if (findings.refusal !== undefined) throw new ConfigError(findings.refusal);
}
