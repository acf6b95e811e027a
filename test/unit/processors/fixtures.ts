// The signed sample deliveries in test/fixtures (with their manifest) as the raw envelopes
// ingest would have stored for them.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RawEnvelope } from '../../../schemas/raw-envelope.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const FIXTURES_DIR = path.resolve(repoRoot, 'test/fixtures');

export interface ManifestDelivery {
  name: string;
  file: string;
  headers: Record<string, string>;
  expect: {
    status: number;
    topics: string[];
    entityKey?: string;
    failureKey?: string;
    rawKey?: string;
    duplicateOf?: string;
    verifiedKeyId?: string;
  };
}

export interface Manifest {
  source: { name: string };
  deliveries: ManifestDelivery[];
  finalTables: Record<string, Record<string, Record<string, string> | null>>;
}

export const manifest: Manifest = JSON.parse(readFileSync(path.join(FIXTURES_DIR, 'manifest.json'), 'utf8'));

export interface FixtureDelivery {
  delivery: ManifestDelivery;
  envelope: RawEnvelope;
}

/** Every delivery that ingest stores (status 200), in manifest order, as its raw envelope. */
export function storedDeliveries(): FixtureDelivery[] {
  const base = Date.parse('2026-11-22T09:00:00Z');
  return manifest.deliveries
    .filter((delivery) => delivery.expect.status === 200)
    .map((delivery, i) => ({ delivery, envelope: envelopeOf(delivery, base + i * 1000) }));
}

/** What ingest extracts: webhook.id (else sha1:<hex of the body>), trigger and date, as sent. */
function envelopeOf(delivery: ManifestDelivery, receivedAt: number): RawEnvelope {
  const body = readFileSync(path.join(FIXTURES_DIR, delivery.file));
  let webhook: { id?: unknown; trigger?: unknown; date?: unknown } = {};
  try {
    webhook = JSON.parse(body.toString('utf8')).webhook ?? {};
  } catch {
    // Unparseable: keyed by digest, no trigger or date.
  }
  const text = (v: unknown) => (typeof v === 'string' ? v : null);
  return {
    webhookId: text(webhook.id) ?? `sha1:${createHash('sha1').update(body).digest('hex')}`,
    source: manifest.source.name,
    trigger: text(webhook.trigger),
    webhookDate: text(webhook.date),
    receivedAt,
    body,
    headers: Object.fromEntries(Object.entries(delivery.headers).map(([k, v]) => [k.toLowerCase(), v])),
    query: null,
    verifiedKeyId: delivery.expect.verifiedKeyId ?? null,
    ingestId: `ingest-${delivery.name}`,
  };
}

/** A raw envelope around a body given as text or an object (serialized with JSON.stringify). */
export function envelopeFor(body: string | object, overrides: Partial<RawEnvelope> = {}): RawEnvelope {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  let id: unknown;
  try {
    id = JSON.parse(text)?.webhook?.id;
  } catch {
    id = undefined;
  }
  return {
    webhookId: typeof id === 'string' ? id : `sha1:${createHash('sha1').update(text).digest('hex')}`,
    source: 'test',
    trigger: null,
    webhookDate: null,
    receivedAt: 1_800_000_000_000,
    body: Buffer.from(text, 'utf8'),
    headers: { 'content-type': 'application/json' },
    query: null,
    verifiedKeyId: 'k1',
    ingestId: 'ingest-1',
    ...overrides,
  };
}
