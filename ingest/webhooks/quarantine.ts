// Keeps what a signed source refused: a request whose signature does not verify still gets its 401,
// and, within the source's bound, goes to webhooks.quarantine so that `hookledger quarantine promote`
// can send it on once the right key is configured (the platform gives up after 72 hours). Only a
// signature that does not match is kept: a missing, malformed or other-algorithm one can never verify.
// The bound counts whole records (key, body, kept headers, query), so it holds whatever is sent.
import type { IncomingHttpHeaders } from 'node:http';
import type { Logger } from '../../runtime/log.js';
import type { QuarantinedRequest } from '../../schemas/quarantined-request.js';
import type { SignatureFailure } from '../errors.js';
import type { IngestMetrics } from '../metrics.js';
import type { RawRecord } from '../producer/port.js';
import type { Source } from '../sources.js';
import { buildEnvelope, envelopeHeaders, KEPT_HEADERS } from './envelope.js';
import { extract } from './extract.js';
import { keptId } from './failing-ids.js';
import type { QuarantineBound } from './quarantine-bound.js';

/** A request refused by the signature check, as the route knows it. */
export interface RefusedRequest {
  source: Source;
  body: Buffer;
  headers: IncomingHttpHeaders;
  /** The masked query string, as the raw envelope would have it. */
  query: string | null;
  receivedAt: number;
  ingestId: string;
  reason: SignatureFailure;
}

/** What the webhook route calls: returns at once and never throws, so the 401 is neither delayed nor changed. */
export interface Quarantine {
  hold(request: RefusedRequest): void;
}

/** The headers a quarantined record keeps: the raw envelope's, and the signature promote checks again. */
export const QUARANTINE_HEADERS: ReadonlySet<string> = new Set([...KEPT_HEADERS, 'x-signature']);

/** Bytes of a record besides its body, headers, query and id (the Avro framing, ids, reason, key ids). */
const RECORD_OVERHEAD_BYTES = 256;

/**
 * The record kept for a refused request: what its raw envelope would be (same query string, same
 * key), with `x-signature`, without a verified key, with the reason and the key ids it was checked with.
 */
export function quarantineRecord(request: RefusedRequest): QuarantinedRequest {
  const envelope = buildEnvelope({
    source: request.source.name,
    body: request.body,
    headers: {},
    query: request.query,
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
    headers: envelopeHeaders(request.headers, QUARANTINE_HEADERS),
    query: envelope.query,
    reason: request.reason,
    // Only a mismatch was compared with the keys; the other reasons stopped at the header.
    triedKeyIds: request.reason === 'mismatch' ? [...request.source.keys.keys()] : [],
    ingestId: envelope.ingestId,
  };
}

export interface QuarantineOptions {
  bound: QuarantineBound;
  encode: (record: QuarantinedRequest) => Buffer | Promise<Buffer>;
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

  async function keep(request: RefusedRequest, counted: number): Promise<void> {
    // The body is parsed (for its id, trigger and date) only here: after the answer, and only for what
    // the bound let through, so the work is bounded by the byte budget, not by what is sent.
    const record = quarantineRecord(request);
    try {
      const value = await encode(record);
      const bytes = value.length + Buffer.byteLength(record.webhookId);
      if (bytes > counted) {
        const verdict = bound.takeMore(record.source, counted, bytes - counted, now());
        if (verdict !== 'keep') {
          metrics.quarantineDropped.inc({ source: record.source, reason: verdict });
          return;
        }
      }
      await store({ key: record.webhookId, value, timestamp: record.receivedAt });
      metrics.quarantined.inc({ source: record.source });
    } catch (error) {
      // Best effort: the platform still retries this delivery, and each retry gets another chance.
      metrics.quarantineDropped.inc({ source: record.source, reason: 'not-stored' });
      log.warn(
        {
          source: record.source,
          // The sender's choice, unverified: a long one is logged by its digest.
          webhookId: keptId(record.webhookId),
          ingestId: record.ingestId,
          reason: (error as Error).message,
        },
        'refused request not quarantined',
      );
    }
  }

  return {
    hold(request) {
      // A missing, malformed or other-algorithm signature can never verify: nothing to promote later.
      if (request.reason !== 'mismatch') {
        metrics.quarantineDropped.inc({ source: request.source.name, reason: 'unverifiable' });
        return;
      }
      // Decided now, in arrival order, on what the record holds at least (body, headers, query); the
      // encoded record's exact size is settled once it is built (keep).
      const counted = recordBytesAtLeast(request);
      const verdict = bound.take(request.source.name, counted, now());
      if (verdict !== 'keep') {
        metrics.quarantineDropped.inc({ source: request.source.name, reason: verdict });
        return;
      }
      defer(() => void keep(request, counted));
    },
  };
}

/** What a quarantined record weighs at least, known without parsing the body. */
function recordBytesAtLeast(request: RefusedRequest): number {
  let bytes = request.body.length + RECORD_OVERHEAD_BYTES + Buffer.byteLength(request.query ?? '');
  for (const [name, value] of Object.entries(envelopeHeaders(request.headers, QUARANTINE_HEADERS)))
    bytes += name.length + Buffer.byteLength(value);
  return bytes;
}
