// The librdkafka side of ingest's producer port: an idempotent producer (acks=all) whose sends resolve
// with each record's own delivery report, and a metadata probe for readiness.
import type { Producer, ProducerGlobalConfig, ProducerTopicConfig } from '@confluentinc/kafka-javascript';
import {
  call,
  connect,
  createProducer,
  disconnect,
  isFatalError,
  type KafkaError,
  type KafkaSettings,
  toKafkaError,
} from '../../runtime/kafka/rdkafka.js';
import { deliverEach, routeDeliveryReports } from '../../runtime/kafka/write-records.js';
import type { ConnectProducer, ProducerPort } from './port.js';

export interface KafkaProducerOptions {
  settings: KafkaSettings;
  topic: string;
  /**
   * How long librdkafka may try to deliver a record (message.timeout.ms): the request deadline, so a
   * record is either acknowledged or reported failed by the time its request is answered.
   */
  deliveryTimeoutMs: number;
  /** The largest record the raw topic takes (its max.message.bytes); librdkafka's own default is 1 MB. */
  maxMessageBytes: number;
  connectTimeoutMs?: number;
  /** Names the client in librdkafka's log lines. */
  component?: string;
  /** Builds the (unconnected) client from the producer's properties; tests pass their own. */
  createClient?: (properties: ProducerGlobalConfig & ProducerTopicConfig) => Producer;
}

/**
 * Connects a fresh idempotent producer each time it is called (a new producer id: the replaced one's
 * sequence state is gone with it). `send` produces every record at once; librdkafka gathers them into
 * produce requests and answers each with its delivery report, which settles that record alone.
 */
export function kafkaProducerConnector({
  settings,
  topic,
  deliveryTimeoutMs,
  maxMessageBytes,
  connectTimeoutMs = 5_000,
  component = 'raw-producer',
  createClient = (properties) => createProducer(settings, properties, component),
}: KafkaProducerOptions): ConnectProducer {
  return async (failed) => {
    const producer = createClient({
      'enable.idempotence': true,
      acks: -1,
      // The batcher in front already gathered concurrent requests: send them on without waiting more.
      'linger.ms': 1,
      'message.timeout.ms': deliveryTimeoutMs,
      'message.max.bytes': maxMessageBytes,
      // A broker that does not answer shows as a failed delivery within the deadline, not later.
      'request.timeout.ms': Math.min(30_000, deliveryTimeoutMs),
      'socket.connection.setup.timeout.ms': connectTimeoutMs,
    });
    let fatal: KafkaError | undefined;
    const fail = (error: unknown) => {
      if (fatal) return;
      fatal = toKafkaError(error, 'producer');
      failed(fatal);
    };
    producer.on('event.error', (error) => {
      // librdkafka retries what it can by itself; a fatal error (e.g. an out-of-order sequence) ends
      // this producer: the owner replaces it at once, and a send meanwhile fails.
      if (isFatalError(error)) fail(error);
    });
    routeDeliveryReports(producer);
    try {
      await connect(producer, connectTimeoutMs);
    } catch (error) {
      await disconnect(producer);
      throw error;
    }
    // Delivery reports are served from librdkafka's own thread: no JavaScript poll timer adds latency.
    producer.setPollInBackground(true);
    return {
      send: async (records) => {
        if (fatal) throw fatal;
        const outcomes = await deliverEach(producer, topic, records);
        // A record refused for a fatal error (produce() after one): the producer is done, not the record.
        const broken = outcomes.find((outcome) => outcome !== undefined && isFatalError(outcome));
        if (broken) fail(broken);
        return outcomes;
      },
      close: async () => {
        await call('flush', (cb) => producer.flush(deliveryTimeoutMs, cb)).catch(() => undefined);
        await disconnect(producer);
      },
    } satisfies ProducerPort;
  };
}

/**
 * A cheap cluster check for readiness while no sends happen: the raw topic's metadata, within a time bound.
 * One check at a time; close() waits for a check under way, so a client it is still connecting is let
 * go too (a probe due just as ingest stopped once kept the process alive after "ingest stopped").
 */
export function kafkaProbe({
  settings,
  topic,
  timeoutMs,
  connectClient = () => connect(createProducer(settings, {}, 'probe'), timeoutMs),
}: {
  settings: KafkaSettings;
  topic: string;
  timeoutMs: number;
  /** Tests pass their own client. */
  connectClient?: () => Promise<Producer>;
}) {
  let client: Producer | undefined;
  let checking: Promise<void> | undefined;
  let closed = false;
  const check = async (): Promise<void> => {
    try {
      client ??= await connectClient();
      // Closed while connecting: the client goes below, with the error the caller gets.
      if (closed) throw new Error('the probe is closed');
      const current = client;
      await call('metadata', (cb) =>
        current.getMetadata({ topic, timeout: timeoutMs }, (error) => cb(error)),
      );
    } catch (error) {
      const failed = client;
      client = undefined;
      if (failed) await disconnect(failed);
      throw error;
    }
  };
  const probe = (): Promise<void> => {
    if (closed) return Promise.reject(new Error('the probe is closed'));
    checking ??= check().finally(() => {
      checking = undefined;
    });
    return checking;
  };
  const close = async () => {
    closed = true;
    await checking?.catch(() => undefined);
    if (client) await disconnect(client);
    client = undefined;
  };
  return { probe, close };
}
