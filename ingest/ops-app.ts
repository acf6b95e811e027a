// Ingest's operations server: /healthz, /readyz and /metrics on a port of their own (INGEST_OPS_HOST,
// INGEST_OPS_PORT), never on the public webhook port: they name every source, heap use and readiness.
import Fastify, { type FastifyInstance, LogController } from 'fastify';
import type { Logger } from '../runtime/log.js';
import type { MetricsSource } from '../runtime/streams/ops-server.js';
import { healthPlugin } from './plugins/health.js';
import { metricsPlugin } from './plugins/metrics.js';
import type { EnvelopeEncoder } from './producer/encoder.js';
import type { RawStore } from './producer/port.js';

export interface OpsDeps {
  store: Pick<RawStore, 'ready'>;
  encoder: Pick<EnvelopeEncoder, 'ready'>;
  /** What /metrics serves: ingest's registry, or every worker's series summed (`ingest --workers N`). */
  metrics: { registry: MetricsSource };
  logger: Logger;
  /** False once the webhook server closes: /readyz turns 503 while in-flight requests finish. */
  accepting?: () => boolean;
  /** True once a drain before stopping began (INGEST_DRAIN_DELAY_MS): /readyz fails, webhooks are still served. */
  draining?: () => boolean;
}

export async function buildOpsApp(deps: OpsDeps): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: deps.logger,
    logController: new LogController({ disableRequestLogging: true }),
    // Scrapes and probes are short: a kept-alive scraper does not hold the process open for long.
    keepAliveTimeout: 5_000,
    requestTimeout: 10_000,
  }) as unknown as FastifyInstance;
  await app.register(healthPlugin, {
    checks: {
      ...(deps.accepting ? { webhooks: deps.accepting } : {}),
      producer: () => deps.store.ready,
      schema: () => deps.encoder.ready,
    },
    ...(deps.draining ? { draining: deps.draining } : {}),
  });
  await app.register(metricsPlugin, { metrics: deps.metrics });
  return app;
}
