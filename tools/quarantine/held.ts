// Reads webhooks.quarantine (what ingest kept of refused requests) and webhooks.quarantine-promotions
// (which of them were promoted, by which run): shared by `hookledger quarantine list` and `promote`.
import { withAdmin } from '../../runtime/kafka/admin.js';
import type { KafkaSettings } from '../../runtime/kafka/rdkafka.js';
import { type ReadRecord, readToEnd } from '../../runtime/kafka/read-to-end.js';
import type { QuarantinedRequest } from '../../schemas/quarantined-request.js';
import type { Serde } from '../../schemas/serde.js';
import { topicNames } from '../../schemas/topics.js';

/** A topic the command needs is not there: `hookledger topics` creates it. */
export class MissingTopicError extends Error {
  override name = 'MissingTopicError';
}

/** What a promotion run records for a webhook id it appended to webhooks.raw. */
export interface PromotionMark {
  /** The run id, as in the raw record's promotion header. */
  run: string;
  /** The quarantined request that was promoted (its raw envelope's ingestId). */
  ingestId: string;
  /** The key that verified it at promotion time. */
  keyId: string;
  promotedAt: number;
}

/** One promotion per webhook id of a source: later requests with the id are its retries. */
export function promotionKey(source: string, webhookId: string): string {
  return `${source}/${webhookId}`;
}

/** Internal state, not Avro (like the changelogs): JSON text. */
export function encodeMark(mark: PromotionMark): Buffer {
  return Buffer.from(JSON.stringify(mark), 'utf8');
}

export function decodeMark(value: Buffer | null): PromotionMark | undefined {
  if (value === null) return undefined;
  try {
    const mark = JSON.parse(value.toString('utf8')) as Partial<PromotionMark>;
    return typeof mark.run === 'string' ? (mark as PromotionMark) : undefined;
  } catch {
    return undefined;
  }
}

async function partitionsOf(settings: KafkaSettings, topic: string): Promise<{ partition: number }[]> {
  return withAdmin(settings, async (admin) => {
    const [found] = await admin.describeTopics([topic]);
    if (found === undefined)
      throw new MissingTopicError(`topic ${topic} does not exist: run \`hookledger topics\` first`);
    return found.partitions.map(({ partition }) => ({ partition }));
  });
}

/** Every promotion recorded (read_committed: a crashed run's open transaction counts for nothing). */
export async function readPromotions(
  settings: KafkaSettings,
  prefix: string,
): Promise<Map<string, PromotionMark>> {
  const topic = topicNames(prefix).quarantinePromotions;
  const marks = new Map<string, PromotionMark>();
  await readToEnd({
    settings,
    topic,
    partitions: await partitionsOf(settings, topic),
    component: 'quarantine-promotions-reader',
    onRecord: ({ key, value }) => {
      const mark = decodeMark(value);
      if (key !== null && mark !== undefined) marks.set(key.toString('utf8'), mark);
    },
  });
  return marks;
}

/** Reads the quarantine to its current end, decoding each request through the registry, in order per partition. */
export async function readHeld(
  settings: KafkaSettings,
  serde: Pick<Serde, 'decode'>,
  prefix: string,
  onHeld: (held: QuarantinedRequest, record: ReadRecord) => void | Promise<void>,
): Promise<void> {
  const topic = topicNames(prefix).quarantine;
  await readToEnd({
    settings,
    topic,
    partitions: await partitionsOf(settings, topic),
    component: 'quarantine-reader',
    onRecord: async (record) => {
      if (record.value === null) return;
      await onHeld(await serde.decode<QuarantinedRequest>(record.value), record);
    },
  });
}
