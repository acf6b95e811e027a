// GET /metrics: the Prometheus text of ingest's registry (or of every worker's, summed).
import type { FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';
import type { MetricsSource } from '../../runtime/streams/ops-server.js';

const metrics: FastifyPluginAsync<{ metrics: { registry: MetricsSource } }> = async (app, { metrics }) => {
  app.get('/metrics', async (_request, reply) => {
    const text = await metrics.registry.metrics();
    return reply.type(metrics.registry.contentType).send(text);
  });
};

export const metricsPlugin = fp(metrics, { name: 'hookledger-metrics', fastify: '5.x' });
