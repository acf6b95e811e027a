// POST /webhooks/:source — raw bytes in, signature checked, envelope stored in Kafka, then 200.
// Encapsulated: its raw-body parser and error handler apply to this route only.
import type { FastifyError, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import {
  INGEST_ERR_BODY_TOO_LARGE,
  INGEST_ERR_RECEIVING,
  INGEST_ERR_SIGNATURE,
  INGEST_ERR_UNKNOWN_SOURCE,
  RETRY_AFTER_SECONDS,
} from '../errors.js';
import type { IngestMetrics } from '../metrics.js';
import type { EnvelopeEncoder } from '../producer/encoder.js';
import type { RawStore } from '../producer/port.js';
import type { Source, Sources } from '../sources.js';
import { buildEnvelope, queryString } from './envelope.js';
import { extract } from './extract.js';
import { type FailingIdPeers, watchFailingIds } from './failing-id-telemetry.js';
import { FailingIds, keptId } from './failing-ids.js';
import type { Quarantine } from './quarantine.js';
import { bytesToReserve, ReceivingBudget } from './receiving-budget.js';
import { verifySignature } from './signature.js';

export interface WebhooksOptions {
  sources: Sources;
  store: RawStore;
  encoder: EnvelopeEncoder;
  metrics: IngestMetrics;
  bodyLimit: number;
  /** Keeps what a signed source refuses (webhooks.quarantine); absent: INGEST_QUARANTINE=false. */
  quarantine?: Quarantine | undefined;
  /** The ids answered with anything but 200 (a list of its own by default; tests pass one with a clock). */
  failingIds?: FailingIds | undefined;
  /** The other workers of `ingest --workers N`, told of failing and stored ids; none with one. */
  failingIdPeers?: FailingIdPeers | undefined;
  /** Query parameters whose values records keep (INGEST_KEPT_QUERY_PARAMETERS); every other value is masked. */
  keptQueryParameters?: ReadonlySet<string> | undefined;
  /** Bytes of bodies received at once (INGEST_MAX_RECEIVING_BYTES; receiving-budget.ts). */
  receivingBytes: number;
}

/** What this route learns about a request before its handler runs. */
interface Delivery {
  source: Source | undefined;
  receivedAt: number;
  webhookId: string | undefined;
  /** Bytes of the receiving budget this request holds until its answer is sent. */
  reservedBytes: number;
}

declare module 'fastify' {
  interface FastifyRequest {
    delivery: Delivery | null;
  }
}

/** RFC 9110 token characters, as fastify checks a media type before choosing a parser. */
const TOKEN = /^[\w!#$%&'*+.^`|~-]+$/;

/** Whether fastify would accept this Content-Type at all (it answers 415 itself otherwise, whatever the parsers). */
export function isValidMediaType(header: string): boolean {
  const semi = header.indexOf(';');
  const mediaType = (semi < 0 ? header : header.slice(0, semi)).trim();
  const slash = mediaType.indexOf('/');
  return slash > 0 && TOKEN.test(mediaType.slice(0, slash)) && TOKEN.test(mediaType.slice(slash + 1));
}

/** Unknown sources share one label: a path segment must not create metric series. */
const UNKNOWN_SOURCE_LABEL = '(unknown)';
const EMPTY = Buffer.alloc(0);

export const webhooksPlugin: FastifyPluginAsync<WebhooksOptions> = async (app, options) => {
  const { sources, store, encoder, metrics, bodyLimit } = options;
  const keptQuery = options.keptQueryParameters ?? new Set<string>();
  const receiving = new ReceivingBudget(options.receivingBytes);

  // Raw bytes for every content type, so no 415 ever reaches the platform and the signature is
  // checked over exactly what was sent. The limit is enforced while reading (413).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    ['application/json', '*'],
    { parseAs: 'buffer', bodyLimit },
    (_request, body, done) => done(null, body),
  );

  app.decorateRequest('delivery', null);
  watchFailingIds(app, {
    failingIds: options.failingIds ?? new FailingIds(),
    peers: options.failingIdPeers,
    registry: metrics.registry,
    sources: sources.keys(),
  });

  // The per-request hooks take fastify's callback form: an async hook costs a promise and a microtask.
  app.addHook('onRequest', (request: FastifyRequest<{ Params: { source: string } }>, reply, done) => {
    const source = sources.get(request.params.source);
    // Taken before the body is read, given back once the answer is sent or the connection is gone.
    const reserved = bytesToReserve(request.headers['content-length'], bodyLimit);
    const delivery: Delivery = { source, receivedAt: Date.now(), webhookId: undefined, reservedBytes: 0 };
    request.delivery = delivery;
    if (!receiving.take(reserved)) {
      reply.header('connection', 'close');
      done(new INGEST_ERR_RECEIVING());
      return;
    }
    delivery.reservedBytes = reserved;
    reply.raw.once('close', () => {
      receiving.give(delivery.reservedBytes);
      delivery.reservedBytes = 0;
    });
    // An empty or malformed Content-Type would get fastify's own 415 before any parser runs: let the
    // catch-all parser take it instead. The envelope keeps the header as sent (request.raw.headers).
    const type = request.headers['content-type'];
    if (type !== undefined && !isValidMediaType(type))
      request.headers = { 'content-type': 'application/octet-stream' };
    done();
  });

  app.addHook('onResponse', (request, reply, done) => {
    const source = request.delivery?.source?.name ?? UNKNOWN_SOURCE_LABEL;
    const status = String(reply.statusCode);
    metrics.requests.inc({ source, status });
    metrics.requestSeconds.observe({ source, status }, reply.elapsedTime / 1000);
    // One line per request at debug only: at info, main.ts logs a summary per interval (request-summary.ts).
    // The source goes in each line rather than a child logger: pino children cost too much per request.
    const line = {
      source,
      status: reply.statusCode,
      webhookId: request.delivery?.webhookId === undefined ? undefined : keptId(request.delivery.webhookId),
      ms: reply.elapsedTime,
    };
    request.log.debug(line, reply.statusCode === 200 ? 'stored' : 'refused');
    done();
  });

  app.setErrorHandler((error: FastifyError, request, reply) => answerError(error, request, reply, bodyLimit));

  app.post<{ Params: { source: string } }>('/webhooks/:source', { bodyLimit }, async (request, reply) => {
    const delivery = request.delivery!;
    const body = Buffer.isBuffer(request.body) ? request.body : EMPTY;
    // Read: from now on the request holds its body's bytes, not the body limit a chunked one reserved
    // (else 64 chunked deliveries waiting for Kafka's acknowledgement would refuse every other sender).
    // (The connection may be gone already: its bytes came back then, and reservedBytes is 0.)
    if (body.length < delivery.reservedBytes) {
      receiving.give(delivery.reservedBytes - body.length);
      delivery.reservedBytes = body.length;
    }
    const source = delivery.source;
    // Read to the same limit as a known source's (413 over it); nothing stored, nothing quarantined.
    if (source === undefined) throw new INGEST_ERR_UNKNOWN_SOURCE();
    const query = queryString(request.url, keptQuery);

    let verifiedKeyId: string | null = null;
    if (source.signature === 'required') {
      const check = verifySignature(body, request.headers['x-signature'], source.keys);
      if (!check.ok) {
        metrics.signatureFailures.inc({ source: source.name, reason: check.reason });
        options.quarantine?.hold({
          source,
          body,
          headers: request.raw.headers,
          query,
          receivedAt: delivery.receivedAt,
          ingestId: request.id,
          reason: check.reason,
        });
        throw new INGEST_ERR_SIGNATURE();
      }
      verifiedKeyId = check.keyId;
    }

    const extracted = extract(body);
    delivery.webhookId = extracted.webhookId;
    const envelope = buildEnvelope({
      source: source.name,
      body,
      headers: request.raw.headers,
      query,
      extracted,
      verifiedKeyId,
      receivedAt: delivery.receivedAt,
      ingestId: request.id,
    });

    metrics.inFlight.inc({ source: source.name });
    try {
      const encoded = encoder.encode(envelope);
      const value = Buffer.isBuffer(encoded) ? encoded : await encoded;
      await store.store({ key: extracted.webhookId, value, timestamp: delivery.receivedAt });
    } finally {
      metrics.inFlight.dec({ source: source.name });
    }
    return reply.code(200).send({ status: 'stored', webhookId: extracted.webhookId, ingestId: request.id });
  });
};

function answerError(error: FastifyError, request: FastifyRequest, reply: FastifyReply, bodyLimit: number) {
  const known =
    error.code === 'FST_ERR_CTP_BODY_TOO_LARGE' ? new INGEST_ERR_BODY_TOO_LARGE(bodyLimit) : error;
  const status = known.statusCode ?? 500;
  if (status === 503) {
    reply.header('retry-after', String(RETRY_AFTER_SECONDS));
    if (known.cause !== undefined) {
      // Kafka or the registry away: retriable, and the producer logs why once; per request, debug only.
      const reason = known.cause instanceof Error ? known.cause.message : String(known.cause);
      request.log.debug({ source: request.delivery?.source?.name, code: known.code, reason }, 'not stored');
    }
  }
  if (status >= 500 && status !== 503) {
    // A bug or an encoding failure: the error is logged (never the body), the platform will retry.
    request.log.error({ source: request.delivery?.source?.name, err: error }, 'unexpected error');
    return reply.code(500).send({ code: 'INGEST_ERR_INTERNAL', message: 'Internal error' });
  }
  return reply.code(status).send({ code: known.code, message: known.message });
}
