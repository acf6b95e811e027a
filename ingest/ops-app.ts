// Ingest's operations server: /healthz, /readyz and /metrics on a port of their own (INGEST_OPS_HOST,
// INGEST_OPS_PORT). /metrics is served here only, never on the public webhook port: it names every
// source and shows heap use. /healthz and /readyz are also on the webhook port (app.ts), same answers.
import Fastify, { type FastifyInstance, LogController } from 'fastify';
import type { Logger } from '../runtime/log.js';
import type { IngestMetrics } from './metrics.js';
import { healthPlugin, type IngestReadiness, ingestHealth } from './plugins/health.js';
import { metricsPlugin } from './plugins/metrics.js';

export interface OpsDeps extends IngestReadiness {
  metrics: IngestMetrics;
  logger: Logger;
}

export async function buildOpsApp(deps: OpsDeps): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: deps.logger,
    logController: new LogController({ disableRequestLogging: true }),
    // Scrapes and probes are short: a kept-alive scraper does not hold the process open for long.
    keepAliveTimeout: 5_000,
    requestTimeout: 10_000,
  }) as unknown as FastifyInstance;
  await app.register(healthPlugin, ingestHealth(deps));
  await app.register(metricsPlugin, { metrics: deps.metrics });
  return app;
}
