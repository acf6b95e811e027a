// The kafkajs side of ingest's producer port: idempotent, acks=all, one send at a time, Java-compatible keys.
import kafkajs, { type Admin, type Kafka } from 'kafkajs';
import type { ConnectProducer } from './port.js';

const { Partitioners } = kafkajs;

export interface KafkaProducerOptions {
  kafka: Kafka;
  topic: string;
  /** How long the leader may wait for the in-sync replicas (acks=all) before answering. */
  ackTimeoutMs: number;
}

/**
 * Connects a fresh idempotent producer each time it is called. Sends with acks=all (-1); the default
 * (murmur2) partitioner places a key where Java clients would, so processors agree on partitions.
 */
export function kafkaProducerConnector({
  kafka,
  topic,
  ackTimeoutMs,
}: KafkaProducerOptions): ConnectProducer {
  return async () => {
    const producer = kafka.producer({
      idempotent: true,
      // kafkajs #1005/#598: an idempotent producer loses data with concurrent requests; the batcher
      // already sends one batch at a time, this keeps kafkajs's own retries in order too.
      maxInFlightRequests: 1,
      allowAutoTopicCreation: false,
      createPartitioner: Partitioners.DefaultPartitioner,
      // Retries end well before the request deadline: then the producer is replaced, not retried forever.
      retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 1_000 },
    });
    try {
      await producer.connect();
    } catch (error) {
      await producer.disconnect().catch(() => undefined);
      throw error;
    }
    return {
      async send(records) {
        await producer.send({
          topic,
          acks: -1,
          timeout: ackTimeoutMs,
          messages: records.map((r) => ({ key: r.key, value: r.value, timestamp: String(r.timestamp) })),
        });
      },
      close: () => producer.disconnect(),
    };
  };
}

/** A cheap cluster check for readiness while no sends happen: the raw topic's metadata, within a time bound. */
export function kafkaProbe({ kafka, topic, timeoutMs }: { kafka: Kafka; topic: string; timeoutMs: number }) {
  let admin: Admin | undefined;
  const probe = async (): Promise<void> => {
    let timer: NodeJS.Timeout | undefined;
    try {
      admin ??= kafka.admin({ retry: { retries: 1, initialRetryTime: 100 } });
      const current = admin;
      await Promise.race([
        (async () => {
          await current.connect();
          await current.fetchTopicMetadata({ topics: [topic] });
        })(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no metadata within ${timeoutMs} ms`)), timeoutMs);
        }),
      ]);
    } catch (error) {
      const failed = admin;
      admin = undefined;
      await failed?.disconnect().catch(() => undefined);
      throw error;
    } finally {
      clearTimeout(timer);
    }
  };
  const close = async () => {
    await admin?.disconnect().catch(() => undefined);
    admin = undefined;
  };
  return { probe, close };
}
