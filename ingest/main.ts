// Starts ingest: the start-up checks, then the producer, the webhook route and the ops port; close() stops
// HTTP, flushes and disconnects (run.ts runs it as the `hookledger ingest` process).
import { readFileSync } from 'node:fs';
import { createSecureContext, type SecureContextOptions } from 'node:tls';
import type { FastifyInstance } from 'fastify';
import { type Config, ConfigError, INGEST_HEADERS_TIMEOUT_MS } from '../runtime/config.js';
import { withAdmin } from '../runtime/kafka/admin.js';
import type { KafkaSettings } from '../runtime/kafka/rdkafka.js';
import { assertBrokersReachable } from '../runtime/kafka/reachable.js';
import { kafkaSettings } from '../runtime/kafka/settings.js';
import type { Logger } from '../runtime/log.js';
import { assertPortFree, checkAll, type ListenTarget, listenFailure } from '../runtime/startup-error.js';
import { RAW_ENVELOPE_SCHEMA } from '../schemas/raw-envelope.js';
import { registryAccess } from '../schemas/registry-access.js';
import { assertRegistryReachable } from '../schemas/registry-reachable.js';
import { loadSchema } from '../schemas/schema-files.js';
import { createSerde } from '../schemas/serde.js';
import { assertRawTopicFitsBodyLimit } from '../schemas/topic-checks.js';
import {
  ENVELOPE_OVERHEAD_BYTES,
  envelopeMaxMessageBytes,
  topicNames,
  valueSubject,
} from '../schemas/topics.js';
import { buildApp } from './app.js';
import { createDrain } from './drain.js';
import { createIngestMetrics, type IngestMetrics } from './metrics.js';
import { buildOpsApp } from './ops-app.js';
import { RegistryEncoder } from './producer/encoder.js';
import { kafkaProbe, kafkaProducerConnector } from './producer/kafka-producer.js';
import { quarantineTopicExists, startQuarantine } from './producer/quarantine-producer.js';
import { RawProducer } from './producer/raw-producer.js';
import { startRequestSummary } from './request-summary.js';
import { insecureSources, type Sources } from './sources.js';
import type { FailingIdPeers } from './webhooks/failing-id-telemetry.js';

/**
 * Raw batches awaiting their acknowledgements at once: librdkafka's own limit of produce requests in
 * flight per broker for an idempotent producer. With one, every request queued behind a batch also
 * waited out that batch's round trip.
 */
const RAW_BATCHES_IN_FLIGHT = 5;

export interface IngestSettings {
  config: Config;
  sources: Sources;
  logger: Logger;
  /** Skip the start-up check of the raw topic (it exists and takes a body of the limit). */
  skipTopicCheck?: boolean;
}

export interface RunningIngest {
  app: FastifyInstance;
  /** http(s)://host:port the server listens on. */
  url: string;
  /** http://host:port of /healthz, /readyz and /metrics (INGEST_OPS_HOST, INGEST_OPS_PORT). */
  opsUrl: string;
  producer: RawProducer;
  encoder: RegistryEncoder;
  /** Its counters, for a status line (`hookledger start`). */
  metrics: IngestMetrics;
  /**
   * Before close() on SIGTERM: /readyz fails while requests are still answered, for
   * INGEST_DRAIN_DELAY_MS, so whoever routes here stops before the listener closes.
   */
  drain(): Promise<void>;
  /** HTTP first (no new requests, in-flight ones answered), then the queue flushed, then disconnect. */
  close(): Promise<void>;
}

export function readTls(
  config: Pick<Config, 'INGEST_TLS_CERT_FILE' | 'INGEST_TLS_KEY_FILE'>,
): { cert: Buffer; key: Buffer } | undefined {
  const { INGEST_TLS_CERT_FILE: certFile, INGEST_TLS_KEY_FILE: keyFile } = config;
  if (!certFile && !keyFile) return undefined;
  if (!certFile)
    throw new ConfigError('INGEST_TLS_CERT_FILE: expected a PEM file path (INGEST_TLS_KEY_FILE is set)');
  if (!keyFile)
    throw new ConfigError('INGEST_TLS_KEY_FILE: expected a PEM file path (INGEST_TLS_CERT_FILE is set)');
  const read = (variable: string, file: string) => {
    try {
      return readFileSync(file);
    } catch (error) {
      throw new ConfigError(
        `${variable}: cannot read ${JSON.stringify(file)} (${(error as NodeJS.ErrnoException).code})`,
      );
    }
  };
  const cert = read('INGEST_TLS_CERT_FILE', certFile);
  const key = read('INGEST_TLS_KEY_FILE', keyFile);
  // Parsed here as the HTTPS server will (a TLS context), so that a DER file, the two swapped or a key of
  // another certificate is said with the variable's name, not as a stack from inside the server.
  const context = (options: SecureContextOptions, problem: string) => {
    try {
      createSecureContext(options);
    } catch (error) {
      throw new ConfigError(`${problem} (${(error as Error).message})`);
    }
  };
  context({ cert }, `INGEST_TLS_CERT_FILE: ${JSON.stringify(certFile)} is not a PEM certificate`);
  context({ key }, `INGEST_TLS_KEY_FILE: ${JSON.stringify(keyFile)} is not a PEM private key`);
  context(
    { cert, key },
    `INGEST_TLS_KEY_FILE: ${JSON.stringify(keyFile)} is not the private key of INGEST_TLS_CERT_FILE's certificate`,
  );
  return { cert, key };
}

/** The webhook port and the ops port, with the variables that set them (for a port-in-use line). */
export function listenTargets(config: Config): { listenAt: ListenTarget; opsAt: ListenTarget } {
  return {
    listenAt: {
      host: config.INGEST_HOST,
      port: config.INGEST_PORT,
      hostVariable: 'INGEST_HOST',
      portVariable: 'INGEST_PORT',
    },
    opsAt: {
      host: config.INGEST_OPS_HOST,
      port: config.INGEST_OPS_PORT,
      hostVariable: 'INGEST_OPS_HOST',
      portVariable: 'INGEST_OPS_PORT',
    },
  };
}

/** Starts ingest and listens; resolves once it accepts connections. */
export async function startIngest(settings: IngestSettings): Promise<RunningIngest> {
  const { keepRefused } = await checkIngestStart(settings);
  const running = await startIngestServer({ ...settings, keepRefused, ops: true });
  return { ...running, opsUrl: running.opsUrl! };
}

/** What the start-up checks decided, for the server (or the workers) started after them. */
export interface IngestPlan {
  /** Requests a signed source refuses are kept in webhooks.quarantine (its topic exists). */
  keepRefused: boolean;
}

/**
 * Everything checked before anything listens or connects: the TLS files, both ports free, Kafka and the
 * registry in reach, the raw topic taking a body of the limit, the quarantine topic. A failure is one
 * line, with nothing left running.
 */
export async function checkIngestStart({
  config,
  sources,
  logger,
  skipTopicCheck = false,
}: IngestSettings): Promise<IngestPlan> {
  readTls(config);
  for (const name of insecureSources(sources)) {
    logger.warn({ source: name }, 'source declared insecure: deliveries are accepted without a signature');
  }
  const rawTopic = topicNames(config.TOPIC_PREFIX).raw;
  const settings: KafkaSettings = kafkaSettings(config, 'hookledger-ingest', logger);
  const { listenAt, opsAt } = listenTargets(config);
  if (opsAt.port !== 0 && opsAt.port === listenAt.port)
    throw new ConfigError(
      `INGEST_OPS_PORT: must differ from INGEST_PORT (${listenAt.port}): operations stay off the webhook port`,
    );
  // A port in use is said before any client starts; listen() still says it if taken meanwhile.
  await assertPortFree(listenAt);
  await assertPortFree(opsAt);
  // Out of reach: one line now, rather than a service that retries in the background and never gets ready.
  await checkAll([
    assertBrokersReachable(config.KAFKA_BROKERS),
    assertRegistryReachable(registryAccess(config)),
  ]);

  // A body under the limit must fit in a record (promise 2): refuse to start otherwise.
  if (!skipTopicCheck) {
    await withAdmin(settings, (admin) =>
      assertRawTopicFitsBodyLimit(admin, { rawTopic, bodyLimit: config.INGEST_BODY_LIMIT }),
    );
  }
  // Requests a signed source refuses are kept (within a bound) on a path of their own. Checked before any
  // client starts: a check that fails (no rights, a timeout) stops the start with nothing left running.
  const signed = [...sources.values()].some((source) => source.signature === 'required');
  const keepRefused =
    config.INGEST_QUARANTINE &&
    signed &&
    (skipTopicCheck || (await quarantineTopicExists({ config, settings, logger })));
  return { keepRefused };
}

/** A started server: without an ops URL when it serves no ops port (a worker). */
export type RunningIngestServer = Omit<RunningIngest, 'opsUrl'> & { opsUrl: string | undefined };

export interface IngestServerSettings extends IngestSettings, IngestPlan {
  /** Serve /healthz, /readyz and /metrics on the ops port (not in a worker: the command serves them). */
  ops: boolean;
  /** A worker's peers, told of failing and stored ids (failing-id-telemetry.ts). */
  failingIdPeers?: FailingIdPeers;
}

/** The server after its checks: the producer, the webhook route on INGEST_PORT and, if asked, the ops port. */
export async function startIngestServer({
  config,
  sources,
  logger,
  keepRefused,
  ops: serveOps,
  failingIdPeers,
}: IngestServerSettings): Promise<RunningIngestServer> {
  const https = readTls(config);
  const rawTopic = topicNames(config.TOPIC_PREFIX).raw;
  const deadlineMs = config.INGEST_DEADLINE_MS;
  const settings: KafkaSettings = kafkaSettings(config, 'hookledger-ingest', logger);
  const { listenAt, opsAt } = listenTargets(config);

  const metrics = createIngestMetrics();
  const serde = createSerde({ ...registryAccess(config), clientId: 'hookledger-ingest' });
  const encoder = new RegistryEncoder({
    serde,
    subject: valueSubject(rawTopic),
    schema: loadSchema(RAW_ENVELOPE_SCHEMA),
    logger,
  });
  void encoder.start();

  const probe = kafkaProbe({ settings, topic: rawTopic, timeoutMs: 3_000 });
  const producer = new RawProducer({
    connect: kafkaProducerConnector({
      settings,
      topic: rawTopic,
      deliveryTimeoutMs: deadlineMs,
      maxMessageBytes: envelopeMaxMessageBytes(config.INGEST_BODY_LIMIT),
    }),
    logger,
    lingerMs: config.INGEST_LINGER_MS,
    maxBatchRecords: config.INGEST_MAX_BATCH_RECORDS,
    // One produce call holds one record batch per partition, and the broker refuses a batch over the
    // topic's max.message.bytes (checked above to be at least this plus the margin).
    maxBatchBytes: envelopeMaxMessageBytes(config.INGEST_BODY_LIMIT) - ENVELOPE_OVERHEAD_BYTES / 2,
    maxPendingBytes: config.INGEST_MAX_PENDING_BYTES,
    maxInFlight: RAW_BATCHES_IN_FLIGHT,
    deadlineMs,
    probe: probe.probe,
    onBatch: (stats) => metrics.observeBatch(stats),
    onReplaced: () => metrics.producerReplacements.inc(),
  });
  metrics.watch({ pendingBytes: () => producer.pendingBytes, ready: () => producer.ready });
  producer.start();
  const quarantine = keepRefused ? startQuarantine({ config, settings, serde, metrics, logger }) : undefined;
  const summary = startRequestSummary({ requests: metrics.requests, logger });
  const drain = createDrain({ delayMs: config.INGEST_DRAIN_DELAY_MS, logger });

  let app: FastifyInstance | undefined;
  let ops: FastifyInstance | undefined;
  let accepting = true;
  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      accepting = false;
      await app?.close();
      await ops?.close();
      await producer.close();
      await quarantine?.close();
      encoder.stop();
      await probe.close();
      await summary.stop();
      logger.info('ingest stopped');
    })();
    return closing;
  };

  try {
    app = await buildApp({
      sources,
      store: producer,
      encoder,
      logger,
      metrics,
      bodyLimit: config.INGEST_BODY_LIMIT,
      deadlineMs,
      keptQueryParameters: config.INGEST_KEPT_QUERY_PARAMETERS,
      limits: {
        maxConnections: config.INGEST_MAX_CONNECTIONS,
        maxReceivingBytes: config.INGEST_MAX_RECEIVING_BYTES,
        requestTimeoutMs: config.INGEST_REQUEST_TIMEOUT_MS,
        headersTimeoutMs: Math.min(INGEST_HEADERS_TIMEOUT_MS, config.INGEST_REQUEST_TIMEOUT_MS),
        keepAliveTimeoutMs: config.INGEST_KEEP_ALIVE_TIMEOUT_MS,
      },
      ...(https ? { https } : {}),
      ...(quarantine ? { quarantine: quarantine.quarantine } : {}),
      ...(failingIdPeers ? { failingIdPeers } : {}),
    });
    let opsUrl: string | undefined;
    if (serveOps) {
      ops = await buildOpsApp({
        store: producer,
        encoder,
        metrics,
        logger,
        accepting: () => accepting,
        draining: () => drain.draining,
      });
      opsUrl = await ops.listen({ host: config.INGEST_OPS_HOST, port: config.INGEST_OPS_PORT });
    }
    const address = await app.listen({ host: config.INGEST_HOST, port: config.INGEST_PORT });
    logger.info(
      {
        address,
        ops: opsUrl,
        rawTopic,
        sources: [...sources.keys()],
        bodyLimit: config.INGEST_BODY_LIMIT,
        deadlineMs,
      },
      'ingest listening',
    );
    return { app, url: address, opsUrl, producer, encoder, metrics, drain: () => drain.begin(), close };
  } catch (error) {
    // Nothing of a failed start may stay: the producer's reconnect loop alone keeps a process running.
    await close();
    throw listenFailure(error, ops?.server.listening || !serveOps ? listenAt : opsAt);
  }
}
