// Keeps what a signed source refused: a request whose signature does not verify still gets its 401,
// and, within the source's bound, goes to webhooks.quarantine so that `hookledger quarantine promote`
// can send it on once the right key is configured (the platform gives up after 72 hours).
import type { IncomingHttpHeaders } from 'node:http';
import type { Logger } from '../../runtime/log.js';
import type { QuarantinedRequest } from '../../schemas/quarantined-request.js';
import type { SignatureFailure } from '../errors.js';
import type { IngestMetrics } from '../metrics.js';
import type { RawRecord } from '../producer/port.js';
import type { Source } from '../sources.js';
import { buildEnvelope } from './envelope.js';
import { extract } from './extract.js';
import type { QuarantineBound } from './quarantine-bound.js';

/** A request refused by the signature check, as the route knows it. */
export interface RefusedRequest {
  source: Source;
  body: Buffer;
  headers: IncomingHttpHeaders;
  url: string;
  receivedAt: number;
  ingestId: string;
  reason: SignatureFailure;
}

/** What the webhook route calls: returns at once and never throws, so the 401 is neither delayed nor changed. */
export interface Quarantine {
  hold(request: RefusedRequest): void;
}

/**
 * The record kept for a refused request: what its raw envelope would be (same headers kept, same
 * query string, same key), without a verified key, with the reason and the key ids it was checked with.
 */
export function quarantineRecord(request: RefusedRequest): QuarantinedRequest {
  const envelope = buildEnvelope({
    source: request.source.name,
    body: request.body,
    headers: request.headers,
    url: request.url,
    extracted: extract(request.body),
    verifiedKeyId: null,
    receivedAt: request.receivedAt,
    ingestId: request.ingestId,
  });
  return {
    webhookId: envelope.webhookId,
    source: envelope.source,
    trigger: envelope.trigger,
    webhookDate: envelope.webhookDate,
    receivedAt: envelope.receivedAt,
    body: envelope.body,
    headers: envelope.headers,
    query: envelope.query,
    reason: request.reason,
    // Only a mismatch was compared with the keys; the other reasons stopped at the header.
    triedKeyIds: request.reason === 'mismatch' ? [...request.source.keys.keys()] : [],
    ingestId: envelope.ingestId,
  };
}

export interface QuarantineOptions {
  bound: QuarantineBound;
  encode: (record: QuarantinedRequest) => Promise<Buffer>;
  /** Resolves once Kafka acknowledged the record (ingest's producer, pointed at webhooks.quarantine). */
  store: (record: RawRecord) => Promise<void>;
  metrics: Pick<IngestMetrics, 'quarantined' | 'quarantineDropped'>;
  logger: Logger;
  now?: () => number;
  /** Runs the keeping after the answer: setImmediate, so the 401 goes out first. */
  defer?: (task: () => void) => void;
}

export function createQuarantine({
  bound,
  encode,
  store,
  metrics,
  logger,
  now = Date.now,
  defer = setImmediate,
}: QuarantineOptions): Quarantine {
  const log = logger.child({ component: 'quarantine' });

  async function keep(request: RefusedRequest): Promise<void> {
    const record = quarantineRecord(request);
    try {
      const value = await encode(record);
      await store({ key: record.webhookId, value, timestamp: record.receivedAt });
      metrics.quarantined.inc({ source: record.source });
    } catch (error) {
      // Best effort: the platform still retries this delivery, and each retry gets another chance.
      metrics.quarantineDropped.inc({ source: record.source, reason: 'not-stored' });
      log.warn(
        {
          source: record.source,
          webhookId: record.webhookId,
          ingestId: record.ingestId,
          reason: (error as Error).message,
        },
        'refused request not quarantined',
      );
    }
  }

  return {
    hold(request) {
      // Decided now, in arrival order; the bytes counted are the body's (headers are capped by Node).
      const verdict = bound.take(request.source.name, request.body.length, now());
      if (verdict !== 'keep') {
        metrics.quarantineDropped.inc({ source: request.source.name, reason: verdict });
        return;
      }
      defer(() => void keep(request));
    },
  };
}
