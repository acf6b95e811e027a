// A simulation run: generated deliveries sent at a rate, up to a count, with optional duplicates and
// reordering, each retried on its own schedule; live counters for progress and a final result.
import { setMaxListeners } from 'node:events';
import { setTimeout as delay } from 'node:timers/promises';
import { reserialize } from './body.js';
import { createDeliveryGenerator, type GeneratorOptions } from './deliveries.js';
import { Limiter } from './limiter.js';
import { createRandom } from './prng.js';
import type { RetryPolicy } from './retry-schedule.js';
import { deliver, deliveryHeaders, type OutgoingDelivery } from './sender.js';

export interface SimulationOptions {
  url: string;
  /** The shared key; unsigned deliveries without one. */
  key?: string;
  /** Webhooks to generate (duplicates come on top); undefined: until stopped. */
  count?: number;
  /** First attempts per second (retries are not held back); undefined: as fast as the concurrency allows. */
  ratePerSecond?: number;
  timeoutMs: number;
  policy: RetryPolicy;
  seed: string;
  /** `webhook.date` of the first delivery, ms. */
  start: number;
  /** Share of acknowledged webhooks the platform sends again (same id). */
  duplicateRate: number;
  /** Share of webhooks held back and sent after 1–3 newer ones. */
  reorderRate: number;
  /** Requests open at once. */
  concurrency: number;
  generator?: Pick<GeneratorOptions, 'failureRate' | 'otherTriggers' | 'api'>;
}

export interface SimulationStats {
  /** Webhooks generated (distinct ids). */
  webhooks: number;
  /** Deliveries sent (first attempts), duplicates included. */
  sent: number;
  /** Of `sent`, re-sends of an acknowledged webhook. */
  duplicates: number;
  /** Of `sent`, re-serialized duplicates (new bytes, new signature, same id). */
  reserialized: number;
  /** Webhooks sent after newer ones. */
  reordered: number;
  acknowledged: number;
  /** Retry attempts. */
  retried: number;
  /** Deliveries waiting for their next retry or in one now. */
  retrying: number;
  gaveUp: number;
  /** Deliveries cut short by a stop. */
  interrupted: number;
  startedAt: number;
}

export interface SimulationResult extends SimulationStats {
  elapsedMs: number;
  /** Acknowledged webhook ids, each once, in the order they were first acknowledged. */
  acknowledgedIds: string[];
  /** Webhook ids given up, each once. */
  gaveUpIds: string[];
  /** What the last given-up delivery's last attempt got. */
  lastFailure?: string;
}

export interface Simulation {
  /** Live counters (read them for progress). */
  readonly stats: Readonly<SimulationStats>;
  run(): Promise<SimulationResult>;
}

interface Outgoing extends OutgoingDelivery {
  /** Send again once acknowledged: as is, or re-serialized. */
  duplicate?: 'same-bytes' | 'reserialized';
  isDuplicate: boolean;
}

export interface SimulationDeps {
  fetch?: typeof globalThis.fetch;
  now?: () => number;
  /** Stops the run: no new deliveries; open requests and waits are cut short. */
  signal?: AbortSignal;
}

export function createSimulation(options: SimulationOptions, deps: SimulationDeps = {}): Simulation {
  const now = deps.now ?? Date.now;
  // Every open request and every retry wait listens to the stop: thousands of listeners are expected.
  const stopper = new AbortController();
  setMaxListeners(0, stopper.signal);
  const signal = stopper.signal;
  if (deps.signal?.aborted) stopper.abort();
  deps.signal?.addEventListener('abort', () => stopper.abort(), { once: true });
  const stats: SimulationStats = {
    webhooks: 0,
    sent: 0,
    duplicates: 0,
    reserialized: 0,
    reordered: 0,
    acknowledged: 0,
    retried: 0,
    retrying: 0,
    gaveUp: 0,
    interrupted: 0,
    startedAt: now(),
  };

  async function run(): Promise<SimulationResult> {
    const generator = createDeliveryGenerator({
      ...options.generator,
      seed: options.seed,
      start: options.start,
    });
    const root = createRandom(options.seed);
    const decide = root.fork('send');
    const jitter = root.fork('jitter');
    const requests = new Limiter(options.concurrency);
    // Bounds deliveries waiting for their first attempt, so generation keeps pace with sending.
    const firstAttempts = new Limiter(options.concurrency);
    const acknowledged = new Set<string>();
    const gaveUp = new Set<string>();
    let lastFailure: string | undefined;
    /** Sent next, before new webhooks: held-back ones released, duplicates of acknowledged ones. */
    const ready: Outgoing[] = [];
    const held: { delivery: Outgoing; after: number }[] = [];
    let open = 0;
    let wake: (() => void) | undefined;
    const wakeUp = () => {
      wake?.();
      wake = undefined;
    };
    signal.addEventListener('abort', wakeUp, { once: true });
    const interval = options.ratePerSecond ? 1000 / options.ratePerSecond : 0;
    let nextSlot = now();

    const outgoing = (id: string, body: string, isDuplicate: boolean): Outgoing => ({
      id,
      body,
      headers: deliveryHeaders(body, options.key),
      isDuplicate,
    });

    function dispatch(delivery: Outgoing): void {
      stats.sent++;
      if (delivery.isDuplicate) stats.duplicates++;
      open++;
      let failed = false;
      let firstDone = false;
      const firstAttemptDone = () => {
        if (!firstDone) firstAttempts.release();
        firstDone = true;
      };
      void deliver(delivery, {
        url: options.url,
        timeoutMs: options.timeoutMs,
        policy: options.policy,
        random: jitter.next,
        limiter: requests,
        fetch: deps.fetch,
        now,
        signal,
        onRetry: () => stats.retried++,
        onAttempted: (_attempt, result) => {
          firstAttemptDone();
          if (!result.ok && !failed) {
            failed = true;
            stats.retrying++;
          }
        },
      }).then((outcome) => {
        firstAttemptDone();
        if (failed) stats.retrying--;
        if (outcome.status === 'acknowledged') {
          stats.acknowledged++;
          acknowledged.add(delivery.id);
          if (delivery.duplicate === 'same-bytes')
            ready.push({ ...delivery, duplicate: undefined, isDuplicate: true });
          if (delivery.duplicate === 'reserialized') {
            stats.reserialized++;
            ready.push(outgoing(delivery.id, reserialize(delivery.body, decide), true));
          }
        } else if (outcome.status === 'gave-up') {
          stats.gaveUp++;
          gaveUp.add(delivery.id);
          lastFailure = outcome.lastFailure;
        } else {
          stats.interrupted++;
        }
        open--;
        wakeUp();
      });
    }

    /** The next delivery to send, or undefined when there is none yet (or ever). */
    function nextDelivery(): Outgoing | 'wait' | undefined {
      const released = ready.shift();
      if (released) return released;
      if (options.count === undefined || stats.webhooks < options.count) {
        const generated = generator.next();
        stats.webhooks++;
        const delivery = outgoing(generated.id, generated.body, false);
        if (decide.chance(options.duplicateRate)) {
          delivery.duplicate = decide.chance(0.3) ? 'reserialized' : 'same-bytes';
        }
        // Each newer webhook sent brings a held-back one closer to going out.
        for (const entry of held.splice(0)) {
          if (--entry.after <= 0) ready.push(entry.delivery);
          else held.push(entry);
        }
        if (decide.chance(options.reorderRate)) {
          stats.reordered++;
          held.push({ delivery, after: decide.int(1, 3) });
          return nextDelivery();
        }
        return delivery;
      }
      if (held.length > 0) {
        ready.push(...held.splice(0).map((entry) => entry.delivery));
        return ready.shift();
      }
      return open > 0 ? 'wait' : undefined;
    }

    while (!signal.aborted) {
      await firstAttempts.acquire();
      const delivery = nextDelivery();
      if (delivery === undefined) {
        firstAttempts.release();
        break;
      }
      if (delivery === 'wait') {
        firstAttempts.release();
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        continue;
      }
      const wait = nextSlot - now();
      if (wait > 0) await delay(wait, undefined, { signal }).catch(() => {});
      if (signal.aborted) {
        firstAttempts.release();
        break;
      }
      nextSlot = Math.max(nextSlot, now()) + interval;
      dispatch(delivery);
    }
    while (open > 0) {
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
    }
    return {
      ...stats,
      elapsedMs: now() - stats.startedAt,
      acknowledgedIds: [...acknowledged],
      gaveUpIds: [...gaveUp],
      ...(lastFailure === undefined ? {} : { lastFailure }),
    };
  }

  return { stats, run };
}
