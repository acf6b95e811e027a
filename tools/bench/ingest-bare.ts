// The HTTP ceiling for the ingest benchmark: a bare Fastify route that reads the body as bytes and answers 200.
import Fastify from 'fastify';

const app = Fastify({ logger: false, bodyLimit: 1_048_576 });
app.removeAllContentTypeParsers();
app.addContentTypeParser(['application/json', '*'], { parseAs: 'buffer' }, (_req, body, done) =>
  done(null, body),
);
app.post('/webhooks/:source', async () => ({ status: 'stored' }));
app.get('/readyz', async () => ({ ready: true }));
const address = await app.listen({ host: '127.0.0.1', port: Number(process.env.PORT ?? 0) });
console.log(JSON.stringify({ address }));
