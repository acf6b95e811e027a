// The quarantine's own path to Kafka: a registry encoder and a producer of its own for
// webhooks.quarantine, so that keeping refused requests never waits on, or slows, webhooks.raw's.
import type { Config } from '../../runtime/config.js';
import { withAdmin } from '../../runtime/kafka/admin.js';
import type { KafkaSettings } from '../../runtime/kafka/rdkafka.js';
import type { Logger } from '../../runtime/log.js';
import { QUARANTINED_REQUEST_SCHEMA, type QuarantinedRequest } from '../../schemas/quarantined-request.js';
import { loadSchema } from '../../schemas/schema-files.js';
import type { Serde } from '../../schemas/serde.js';
import {
  ENVELOPE_OVERHEAD_BYTES,
  envelopeMaxMessageBytes,
  topicNames,
  valueSubject,
} from '../../schemas/topics.js';
import type { IngestMetrics } from '../metrics.js';
import { createQuarantine, type Quarantine } from '../webhooks/quarantine.js';
import { QuarantineBound } from '../webhooks/quarantine-bound.js';
import { RegistryEncoder } from './encoder.js';
import { kafkaProducerConnector } from './kafka-producer.js';
import { RawProducer } from './raw-producer.js';

/** Quarantined bytes waiting for Kafka at most: past this (Kafka away), refused requests are not kept. */
export const QUARANTINE_MAX_PENDING_BYTES = 16 * 1_048_576;

/**
 * Whether webhooks.quarantine exists; warns once when it does not (a deployment that has not run
 * `hookledger topics` since the quarantine came): ingest then runs without it rather than trying,
 * and failing, to write each refused request.
 */
export async function quarantineTopicExists({
  config,
  settings,
  logger,
}: {
  config: Config;
  settings: KafkaSettings;
  logger: Logger;
}): Promise<boolean> {
  const topic = topicNames(config.TOPIC_PREFIX).quarantine;
  const [found] = await withAdmin(settings, (admin) => admin.describeTopics([topic]));
  if (found === undefined)
    logger.warn(
      { topic },
      'the quarantine topic does not exist: requests refused for their signature are not kept (run `hookledger topics`)',
    );
  return found !== undefined;
}

export interface RunningQuarantine {
  quarantine: Quarantine;
  /** Sends what is queued (bounded by the deadline), then disconnects. */
  close(): Promise<void>;
}

export function startQuarantine({
  config,
  settings,
  serde,
  metrics,
  logger,
}: {
  config: Config;
  settings: KafkaSettings;
  serde: Pick<Serde, 'register' | 'encode' | 'encodeCached'>;
  metrics: IngestMetrics;
  logger: Logger;
}): RunningQuarantine {
  const topic = topicNames(config.TOPIC_PREFIX).quarantine;
  const maxMessageBytes = envelopeMaxMessageBytes(config.INGEST_BODY_LIMIT);
  const encoder = new RegistryEncoder<QuarantinedRequest>({
    serde,
    subject: valueSubject(topic),
    schema: loadSchema(QUARANTINED_REQUEST_SCHEMA),
    logger,
  });
  void encoder.start();
  const producer = new RawProducer({
    connect: kafkaProducerConnector({
      settings,
      topic,
      deliveryTimeoutMs: config.INGEST_DEADLINE_MS,
      maxMessageBytes,
      component: 'quarantine-producer',
    }),
    logger,
    component: 'quarantine-producer',
    lingerMs: config.INGEST_LINGER_MS,
    maxBatchRecords: config.INGEST_MAX_BATCH_RECORDS,
    maxBatchBytes: maxMessageBytes - ENVELOPE_OVERHEAD_BYTES / 2,
    maxPendingBytes: QUARANTINE_MAX_PENDING_BYTES,
    deadlineMs: config.INGEST_DEADLINE_MS,
  });
  producer.start();
  const quarantine = createQuarantine({
    bound: new QuarantineBound({
      requestsPerSecond: config.INGEST_QUARANTINE_PER_SECOND,
      bytesPerSecond: config.INGEST_QUARANTINE_BYTES_PER_SECOND,
      total: {
        requestsPerSecond: config.INGEST_QUARANTINE_TOTAL_PER_SECOND,
        bytesPerSecond: config.INGEST_QUARANTINE_TOTAL_BYTES_PER_SECOND,
      },
    }),
    encode: (record) => encoder.encode(record),
    store: (record) => producer.store(record),
    metrics,
    logger,
  });
  return {
    quarantine,
    close: async () => {
      await producer.close();
      encoder.stop();
    },
  };
}
