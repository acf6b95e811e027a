// /healthz (the process answers) and /readyz (it can store deliveries now), for orchestrators and load balancers.
import type { FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';

export interface HealthOptions {
  /** Named readiness checks; /readyz is 200 only when every one is true. */
  checks: Record<string, () => boolean>;
  /** True while the instance drains before it stops (INGEST_DRAIN_DELAY_MS): /readyz fails, requests are served. */
  draining?: () => boolean;
}

const health: FastifyPluginAsync<HealthOptions> = async (app, { checks, draining = () => false }) => {
  let closing = false;
  // A load balancer should stop sending before the listener goes away.
  app.addHook('preClose', async () => {
    closing = true;
  });

  app.get('/healthz', async () => ({ status: 'ok' }));

  app.get('/readyz', async (_request, reply) => {
    const results: Record<string, boolean> = { accepting: !closing && !draining() };
    for (const [name, check] of Object.entries(checks)) results[name] = check();
    const ready = Object.values(results).every(Boolean);
    return reply.code(ready ? 200 : 503).send({ ready, checks: results });
  });
};

export const healthPlugin = fp(health, { name: 'hookledger-health', fastify: '5.x' });
