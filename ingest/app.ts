// The ingest HTTP app: built from its dependencies, never listening (main.ts and tests decide that).
// It serves the webhook route only; /healthz, /readyz and /metrics are on the ops app (ops-app.ts).
import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyServerOptions, LogController } from 'fastify';
import type { Logger } from '../runtime/log.js';
import { createIngestMetrics, type IngestMetrics } from './metrics.js';
import type { EnvelopeEncoder } from './producer/encoder.js';
import type { RawStore } from './producer/port.js';
import { lazyChildLoggerFactory } from './request-logger.js';
import type { Sources } from './sources.js';
import type { FailingIdPeers } from './webhooks/failing-id-telemetry.js';
import type { FailingIds } from './webhooks/failing-ids.js';
import { webhooksPlugin } from './webhooks/plugin.js';
import type { Quarantine } from './webhooks/quarantine.js';

export interface ServerLimits {
  /**
   * Time allowed to receive a whole request (headers and body): bounds slow clients. The platform sends
   * at most INGEST_BODY_LIMIT (1 MiB) and waits 30 s for the answer (docs/webhook-contract.md).
   */
  requestTimeoutMs: number;
  /** Time allowed to receive the headers. */
  headersTimeoutMs: number;
  /**
   * Idle time before a kept-alive connection is closed: short, so idle sockets do not pile up (behind a
   * load balancer, keep its idle timeout below this one).
   */
  keepAliveTimeoutMs: number;
  /** Larger request headers get 431. */
  maxHeaderBytes: number;
  /** Open connections at most; more are closed as they arrive (per-IP limits belong to a proxy in front). */
  maxConnections: number;
  /** Bytes of bodies being received at once; past it, 503 before a body is read (receiving-budget.ts). */
  maxReceivingBytes: number;
}

export const DEFAULT_LIMITS: ServerLimits = {
  requestTimeoutMs: 10_000,
  headersTimeoutMs: 5_000,
  keepAliveTimeoutMs: 10_000,
  maxHeaderBytes: 16_384,
  maxConnections: 1_024,
  maxReceivingBytes: 64 * 1_048_576,
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
  /** The other workers of `ingest --workers N`, told of failing and stored ids; none with one. */
  failingIdPeers?: FailingIdPeers;
  /** INGEST_KEPT_QUERY_PARAMETERS: the query parameters whose values records keep. */
  keptQueryParameters?: ReadonlySet<string>;
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
    // Each request's child logger is built when it first writes a line (at info, most never do).
    childLoggerFactory: lazyChildLoggerFactory,
    // `POST /webhooks/<source>/` is the same webhook: a platform configured with the slash would otherwise
    // get 404 and retry for 72 h in vain. Only this app's routes match (operations are on the ops app).
    routerOptions: { ignoreTrailingSlash: true },
    // A request that arrives while the app closes (its headers finishing on a busy connection) goes through
    // the route as any other: the producer closes only after the app, so it is stored and answered 200
    // (with `connection: close`). Fastify's default answered it 503 without Retry-After, and uncounted.
    return503OnClosing: false,
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
  app.server.maxConnections = limits.maxConnections;

  // While closing, answers close their connection: a kept-alive connection that turns idle after its
  // in-flight request would otherwise hold close() open until the client lets go.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  // Per-request hooks take fastify's callback form: an async hook costs a promise and a microtask.
  app.addHook('onSend', (_request, reply, _payload, done) => {
    if (closing) reply.header('connection', 'close');
    done();
  });

  await app.register(webhooksPlugin, {
    sources: deps.sources,
    store: deps.store,
    encoder: deps.encoder,
    metrics,
    bodyLimit,
    quarantine: deps.quarantine,
    failingIds: deps.failingIds,
    failingIdPeers: deps.failingIdPeers,
    keptQueryParameters: deps.keptQueryParameters,
    receivingBytes: Math.max(limits.maxReceivingBytes, bodyLimit),
  });
  return app;
}
