// Synthetic deliveries for the processor tests and benchmark: many webhook ids across entities, with
// byte-identical retries, re-serialized retries and reordering, as raw envelopes.
import { randomUUID } from 'node:crypto';
import type { RawEnvelope } from '../../schemas/raw-envelope.js';

export interface LoadOptions {
  /** Distinct webhook ids. */
  ids: number;
  /** Extra deliveries of already-sent ids (half byte-identical, half re-serialized). */
  retries: number;
  /** Shuffle everything (retries may then come before their first delivery). */
  shuffle?: boolean;
  source?: string;
  /** receivedAt (and record time) of the first delivery; later ones step by 1 ms. */
  startAt?: number;
  /** Distinguishes runs: ids are `<run>-<n>`. */
  run?: string;
  seed?: number;
}

const TRIGGERS = [
  'UserAdded',
  'AccountUpdated',
  'DocumentAdded',
  'ToDoDone',
  'EnergySwitchUpdated',
  'PaymentAdded',
];

/**
 * The body of delivery `n`: a small record of one of several entities, most with a few fields, dated
 * `date` (webhook.date; by default 2026-11-20 plus n seconds).
 */
export function bodyFor(
  id: string,
  n: number,
  date = new Date(Date.parse('2026-11-20T00:00:00Z') + n * 1000).toISOString(),
): Record<string, unknown> {
  const trigger = TRIGGERS[n % TRIGGERS.length]!;
  const entityId = `e_${n % 997}`;
  const typename = trigger.replace(/(Added|Updated|Done)$/, '');
  const record: Record<string, unknown> =
    typename === 'EnergySwitch'
      ? {
          __typename: 'EnergySwitch',
          id: entityId,
          tariffName: `Tariff ${n % 7}`,
          savings: { currency: 'GBP', amount: (n % 300) + 0.25 },
          commission: { status: 'commissionExpected', statusDate: date, fuelsWithCommissionExpected: 2 },
        }
      : { __typename: typename, id: entityId, name: `name ${n}`, count: n % 13 };
  return {
    webhook: { id, trigger, date },
    query: {
      api: 'https://api.platform.example/v1/graphql',
      query: 'query Q($id: ID!) { q }',
      variables: { id: entityId },
    },
    data: { [`get${typename}`]: record },
  };
}

/** A small deterministic PRNG, so a failing run can be repeated. */
function random(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 0x1_0000_0000;
  };
}

export interface Load {
  envelopes: RawEnvelope[];
  /** Every distinct webhook id. */
  ids: string[];
}

/**
 * webhook.date of delivery `n` of `ids`: rising with n, all within the 48 hours before the first
 * delivery's receivedAt (`startAt`). Dates tied to receipt, not to a calendar day, keep every delivery
 * within WEBHOOK_MAX_AGE whenever the load is generated: with fixed dates, a load received `Date.now()`
 * days later (the benchmarks) was all dead-lettered as too old.
 */
export function webhookDate(startAt: number, n: number, ids: number): string {
  const stepMs = Math.min(1_000, Math.floor((47 * 3_600_000) / Math.max(1, ids)));
  return new Date(startAt - 3_600_000 - (ids - n) * stepMs).toISOString();
}

export function generateLoad({
  ids,
  retries,
  shuffle = true,
  source = 'load',
  startAt = Date.parse('2026-11-22T00:00:00Z'),
  run = randomUUID().slice(0, 8),
  seed = 42,
}: LoadOptions): Load {
  const rand = random(seed);
  const firsts: { id: string; body: Record<string, unknown> }[] = [];
  for (let n = 0; n < ids; n++)
    firsts.push({ id: `${run}-${n}`, body: bodyFor(`${run}-${n}`, n, webhookDate(startAt, n, ids)) });
  const deliveries: Buffer[] = firsts.map(({ body }) => Buffer.from(JSON.stringify(body)));
  const idOf: string[] = firsts.map(({ id }) => id);
  for (let r = 0; r < retries; r++) {
    const k = Math.floor(rand() * ids);
    const { id, body } = firsts[k]!;
    // Half identical bytes, half the same JSON serialized differently (indentation).
    deliveries.push(Buffer.from(r % 2 === 0 ? JSON.stringify(body) : JSON.stringify(body, null, 2)));
    idOf.push(id);
  }
  const order = deliveries.map((_, i) => i);
  if (shuffle) {
    for (let i = order.length - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      [order[i], order[j]] = [order[j]!, order[i]!];
    }
  }
  const envelopes = order.map((i, position) => ({
    webhookId: idOf[i]!,
    source,
    trigger: null,
    webhookDate: null,
    receivedAt: startAt + position,
    body: deliveries[i]!,
    headers: { 'content-type': 'application/json' },
    query: null,
    verifiedKeyId: null,
    ingestId: randomUUID(),
  }));
  return { envelopes, ids: idOf.slice(0, ids) };
}
