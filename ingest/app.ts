// The ingest HTTP app: built from its dependencies, never listening (main.ts and tests decide that).
import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyServerOptions, LogController } from 'fastify';
import type { Logger } from '../runtime/log.js';
import { createIngestMetrics, type IngestMetrics } from './metrics.js';
import { healthPlugin } from './plugins/health.js';
import { metricsPlugin } from './plugins/metrics.js';
import type { EnvelopeEncoder } from './producer/encoder.js';
import type { RawStore } from './producer/port.js';
import type { Sources } from './sources.js';
import type { FailingIds } from './webhooks/failing-ids.js';
import { webhooksPlugin } from './webhooks/plugin.js';
import type { Quarantine } from './webhooks/quarantine.js';

export interface ServerLimits {
  /** Time allowed to receive a whole request (headers and body): bounds slow clients. */
  requestTimeoutMs: number;
  /** Time allowed to receive the headers. */
  headersTimeoutMs: number;
  /** Idle time before a kept-alive connection is closed; above a load balancer's own idle timeout. */
  keepAliveTimeoutMs: number;
  /** Larger request headers get 431. */
  maxHeaderBytes: number;
}

export const DEFAULT_LIMITS: ServerLimits = {
  requestTimeoutMs: 15_000,
  headersTimeoutMs: 10_000,
  keepAliveTimeoutMs: 72_000,
  maxHeaderBytes: 16_384,
};

export interface IngestDeps {
  sources: Sources;
  store: RawStore;
  encoder: EnvelopeEncoder;
  logger: Logger;
  metrics?: IngestMetrics;
  /** INGEST_BODY_LIMIT. */
  bodyLimit?: number;
  /** INGEST_DEADLINE_MS: an idle socket is not cut while its request waits for Kafka. */
  deadlineMs?: number;
  limits?: Partial<ServerLimits>;
  /** PEM certificate chain and key: serve HTTPS natively. */
  https?: { cert: Buffer; key: Buffer };
  /** Keeps requests a signed source refuses (webhooks.quarantine); none when absent. */
  quarantine?: Quarantine;
  /** The webhook ids answered with anything but 200 (tests pass one with their own clock). */
  failingIds?: FailingIds;
  /** True once a drain before stopping began: /readyz fails while requests are still served. */
  draining?: () => boolean;
}

export async function buildApp(deps: IngestDeps): Promise<FastifyInstance> {
  const bodyLimit = deps.bodyLimit ?? 1_048_576;
  const deadlineMs = deps.deadlineMs ?? 10_000;
  const limits = { ...DEFAULT_LIMITS, ...deps.limits };
  const metrics = deps.metrics ?? createIngestMetrics();

  const options = {
    loggerInstance: deps.logger,
    // One line per answer comes from the webhook route; fastify's two lines per request would double it.
    logController: new LogController({ disableRequestLogging: true }),
    // The request id is the envelope's ingestId: a log line leads to its record. Never taken from the client.
    genReqId: () => randomUUID(),
    requestIdHeader: false,
    bodyLimit,
    requestTimeout: limits.requestTimeoutMs,
    connectionTimeout: deadlineMs + limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
  } satisfies FastifyServerOptions;
  const serverOptions = {
    maxHeaderSize: limits.maxHeaderBytes,
    // Node checks the request and headers timeouts this often (30 s by default): too coarse to bound them.
    connectionsCheckingInterval: Math.min(1_000, limits.headersTimeoutMs),
  };
  const app = (deps.https
    ? Fastify({ ...options, https: { ...deps.https, ...serverOptions } })
    : Fastify({ ...options, http: serverOptions })) as unknown as FastifyInstance;
  app.server.headersTimeout = limits.headersTimeoutMs;

  // While closing, answers close their connection: a kept-alive connection that turns idle after its
  // in-flight request would otherwise hold close() open until the client lets go.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onSend', async (_request, reply) => {
    if (closing) reply.header('connection', 'close');
  });

  await app.register(healthPlugin, {
    checks: { producer: () => deps.store.ready, schema: () => deps.encoder.ready },
    ...(deps.draining ? { draining: deps.draining } : {}),
  });
  await app.register(metricsPlugin, { metrics });
  await app.register(webhooksPlugin, {
    sources: deps.sources,
    store: deps.store,
    encoder: deps.encoder,
    metrics,
    bodyLimit,
    quarantine: deps.quarantine,
    failingIds: deps.failingIds,
  });
  return app;
}
