// Open-loop load for the ingest benchmark: requests leave on schedule whatever the answers do, and each
// latency counts from its scheduled departure (no coordinated omission).
import { signBody } from '../../ingest/webhooks/signature.js';
import { RawHttpPool, requestBytes } from './raw-http-pool.js';

export interface LoadStep {
  offeredRate: number;
  durationS: number;
}

export interface LoadResult {
  offeredRate: number;
  sent: number;
  ok: number;
  /** Answers other than 200, by status ("error" for a failed connection). */
  failures: Record<string, number>;
  /** Scheduled requests not sent because too many were outstanding. */
  skipped: number;
  throughput: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /**
   * How late the 99th percentile request left against its schedule: the load generator's own wait for a
   * core. Its latency counts from the schedule (open loop), so this part of p99Ms is the generator's.
   */
  lateP99Ms: number;
  /** When the schedule began (Date.now()): request n was due n / offeredRate seconds after it. */
  startedAt: number;
}

export interface Delivery {
  path: string;
  body: Buffer;
  headers: Record<string, string>;
}

/** A delivery as the platform sends it: JSON, its headers, signed with the source's key. */
export function signedDelivery(path: string, body: Buffer, key: string): Delivery {
  return {
    path,
    body,
    headers: {
      'content-type': 'application/json',
      accept: '*/*',
      'user-agent': 'Platform-Webhooks/1.4.2',
      'x-signature': signBody(body, key),
    },
  };
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** Sends `deliveries` (cycled) to host:port at the offered rate for the step's duration. */
export async function runStep(
  target: { host: string; port: number },
  deliveries: readonly Delivery[],
  step: LoadStep,
  maxOutstanding = 4_000,
): Promise<LoadResult> {
  const pool = new RawHttpPool(target, 256);
  // Each request's bytes are built when it first leaves, so the schedule starts at once (a caller such as
  // bench:freshness counts from the moment it called) however many deliveries there are.
  const requests: Array<Buffer | undefined> = new Array(deliveries.length);
  const bytesOf = (index: number): Buffer => {
    const at = index % deliveries.length;
    const delivery = deliveries[at]!;
    requests[at] ??= requestBytes(target.host, delivery.path, delivery.headers, delivery.body);
    return requests[at];
  };
  const total = Math.round(step.offeredRate * step.durationS);
  const latencies = new Float64Array(total);
  const lateness = new Float64Array(total);
  const failures: Record<string, number> = {};
  let ok = 0;
  let sent = 0;
  let skipped = 0;
  let done = 0;
  let outstanding = 0;
  let lastAnswer = 0;
  const started = performance.now();
  const startedAt = Date.now();

  await new Promise<void>((resolve) => {
    const fire = (index: number, scheduledAt: number) => {
      if (outstanding >= maxOutstanding) {
        skipped++;
        if (done + skipped === total) resolve();
        return;
      }
      lateness[sent] = performance.now() - scheduledAt;
      outstanding++;
      sent++;
      pool.send(bytesOf(index), (outcome) => {
        const now = performance.now();
        lastAnswer = now;
        if (outcome === 200) latencies[ok++] = now - scheduledAt;
        else failures[String(outcome)] = (failures[String(outcome)] ?? 0) + 1;
        done++;
        outstanding--;
        if (done + skipped === total) resolve();
      });
    };
    let scheduled = 0;
    const interval = 1_000 / step.offeredRate;
    const tick = () => {
      const now = performance.now();
      while (scheduled < total && started + scheduled * interval <= now) {
        fire(scheduled, started + scheduled * interval);
        scheduled++;
      }
      if (scheduled < total) setTimeout(tick, 1);
    };
    tick();
  });
  pool.close();
  const elapsedS = (lastAnswer - started) / 1000;
  const sorted = latencies.slice(0, ok).sort();
  return {
    offeredRate: step.offeredRate,
    sent,
    ok,
    failures,
    skipped,
    throughput: ok / Math.max(elapsedS, step.durationS),
    p50Ms: percentile(sorted, 50),
    p99Ms: percentile(sorted, 99),
    maxMs: sorted.length ? sorted[sorted.length - 1]! : Number.NaN,
    lateP99Ms: percentile(lateness.slice(0, sent).sort(), 99),
    startedAt,
  };
}
