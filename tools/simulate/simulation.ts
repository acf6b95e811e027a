// A simulation run: generated webhooks sent at a rate, up to a count, with exact shares of invalid ones,
// OperationFailures, duplicates and reordering (shares.ts), each retried on its own schedule; live
// counters for progress and a final result.
import { setMaxListeners } from 'node:events';
import { setTimeout as delay } from 'node:timers/promises';
import { reserialize } from './body.js';
import { createDeliveryGenerator, type Delivery, type GeneratorOptions, type Intent } from './deliveries.js';
import { INVALID_REASONS, type InvalidReason } from './invalid.js';
import { Limiter } from './limiter.js';
import { createRandom } from './prng.js';
import type { RetryPolicy } from './retry-schedule.js';
import { deliver, deliveryHeaders, type OutgoingDelivery } from './sender.js';
import { createShareSampler } from './shares.js';

export interface SimulationOptions {
  url: string;
  /** The shared key; unsigned deliveries without one. */
  key?: string;
  /** Webhooks to send (duplicates and retries come on top); undefined: until stopped. */
  count?: number;
  /** New deliveries (webhooks and duplicates) per second; retries after a failure are not held back. Undefined: as fast as the concurrency allows. */
  ratePerSecond?: number;
  timeoutMs: number;
  policy: RetryPolicy;
  seed: string;
  /** `webhook.date` of the first delivery, ms. */
  start: number;
  /** Share of webhooks the platform sends again once acknowledged (same id). */
  duplicateRate: number;
  /** Share of webhooks held back and sent after 1–3 newer ones. */
  reorderRate: number;
  /** Share of webhooks the router dead-letters (invalid.ts). */
  invalidRate: number;
  /** Share of webhooks answered with an OperationFailure for an id not found (to webhooks.failures). */
  failureRate: number;
  /** Requests open at once. */
  concurrency: number;
  generator?: Pick<
    GeneratorOptions,
    'otherTriggers' | 'api' | 'meanGapMs' | 'notAfter' | 'minimalRate' | 'onSwitch'
  >;
}

export interface SimulationStats {
  /** Webhooks sent (distinct ids whose first attempt was made). */
  webhooks: number;
  /** Requests made: each webhook's first attempt, each duplicate's, and every retry after a failure. */
  deliveries: number;
  /** Webhooks the endpoint acknowledged (a 200), each once. */
  acknowledged: number;
  /** Acknowledged webhooks sent again on purpose (the platform delivers at least once), same id. */
  duplicates: number;
  /** Of `duplicates`, re-serialized (new bytes, new signature, same id). */
  reserialized: number;
  /** Attempts made again after a non-200 or a timeout. */
  retriedAfterFailure: number;
  /** Webhooks sent after a newer one. */
  reordered: number;
  /** Deliveries waiting for their next retry or in one now. */
  retrying: number;
  /**
   * What the last failed attempt got, any delivery's: the progress line shows it, since a wrong key or
   * URL is retried like an outage for the whole retry window.
   */
  lastAttemptFailure?: string;
  /** Webhooks never acknowledged within the retry window. */
  gaveUp: number;
  /** Duplicates never acknowledged within the retry window (their webhook was: nothing is lost). */
  duplicatesGaveUp: number;
  /** Webhooks sent that the router dead-letters, and by which reason. */
  invalid: number;
  invalidByReason: Partial<Record<InvalidReason, number>>;
  /** Webhooks sent whose answer is an OperationFailure (they go to webhooks.failures). */
  failures: number;
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

/** Every retry: the duplicates sent on purpose and the attempts after a failure. */
export function retried(stats: Readonly<SimulationStats>): number {
  return stats.duplicates + stats.retriedAfterFailure;
}

export interface Simulation {
  /** Live counters (read them for progress). */
  readonly stats: Readonly<SimulationStats>;
  run(): Promise<SimulationResult>;
}

interface Outgoing extends OutgoingDelivery {
  /** Position in generation order (duplicates keep their webhook's). */
  seq: number;
  /** Send again once acknowledged: as is, or re-serialized. */
  duplicate?: 'same-bytes' | 'reserialized';
  isDuplicate: boolean;
  /** Where the router sends it, and why when it dead-letters it. */
  route: Delivery['route'];
  reason?: InvalidReason;
}

export interface SimulationDeps {
  fetch?: typeof globalThis.fetch;
  now?: () => number;
  /** Stops the run: no new deliveries; open requests and waits are cut short. */
  signal?: AbortSignal;
  /** Called after each failed attempt (not one the stop interrupted) with what it got. */
  onAttemptFailed?: (failure: string) => void;
}

/** The counts of a run that has sent nothing yet. */
export function emptyStats(startedAt: number): SimulationStats {
  return {
    webhooks: 0,
    deliveries: 0,
    acknowledged: 0,
    duplicates: 0,
    reserialized: 0,
    retriedAfterFailure: 0,
    reordered: 0,
    retrying: 0,
    gaveUp: 0,
    duplicatesGaveUp: 0,
    invalid: 0,
    invalidByReason: {},
    failures: 0,
    interrupted: 0,
    startedAt,
  };
}

export function createSimulation(options: SimulationOptions, deps: SimulationDeps = {}): Simulation {
  const now = deps.now ?? Date.now;
  // Every open request and every retry wait listens to the stop: thousands of listeners are expected.
  const stopper = new AbortController();
  setMaxListeners(0, stopper.signal);
  const signal = stopper.signal;
  if (deps.signal?.aborted) stopper.abort();
  deps.signal?.addEventListener('abort', () => stopper.abort(), { once: true });
  const stats = emptyStats(now());

  async function run(): Promise<SimulationResult> {
    const { count } = options;
    const generator = createDeliveryGenerator({
      ...options.generator,
      seed: options.seed,
      start: options.start,
    });
    const root = createRandom(options.seed);
    const decide = root.fork('send');
    const jitter = root.fork('jitter');
    // One sampler per concern, each on its own fork, so one rate does not shift another's choices.
    const intents = createShareSampler(
      root.fork('intents'),
      [options.invalidRate, options.failureRate],
      count,
    );
    const duplicated = createShareSampler(root.fork('duplicates'), [options.duplicateRate], count);
    // The last webhook has nothing newer to wait for: only those before it can be reordered.
    const heldBack = createShareSampler(
      root.fork('reorder'),
      [options.reorderRate],
      count,
      count === undefined ? undefined : count - 1,
    );
    const requests = new Limiter(options.concurrency);
    // Bounds deliveries waiting for their first attempt, so generation keeps pace with sending.
    const firstAttempts = new Limiter(options.concurrency);
    const acknowledged = new Set<string>();
    const gaveUp = new Set<string>();
    let lastFailure: string | undefined;
    /** Sent next, before new webhooks: held-back ones released, duplicates of acknowledged ones. */
    const ready: Outgoing[] = [];
    /** Held-back webhooks, each waiting for this many newer ones to be sent first. */
    const held: { delivery: Outgoing; after: number }[] = [];
    let generated = 0;
    let invalidMade = 0;
    let newestSent = -1;
    let open = 0;
    let wake: (() => void) | undefined;
    const wakeUp = () => {
      wake?.();
      wake = undefined;
    };
    signal.addEventListener('abort', wakeUp, { once: true });
    const interval = options.ratePerSecond ? 1000 / options.ratePerSecond : 0;
    let nextSlot = now();

    const outgoing = (from: Omit<Outgoing, 'headers'>): Outgoing => ({
      ...from,
      headers: deliveryHeaders(from.body, options.key),
    });

    /** What the next webhook is made to be: invalid ones cycle through the reasons, for even counts. */
    function nextIntent(): Intent {
      const group = intents.next();
      if (group === 0) return INVALID_REASONS[invalidMade++ % INVALID_REASONS.length]!;
      return group === 1 ? 'failure' : 'routed';
    }

    function countFirstSend(delivery: Outgoing): void {
      stats.deliveries++;
      if (delivery.isDuplicate) {
        stats.duplicates++;
        return;
      }
      stats.webhooks++;
      if (delivery.route === 'dlq' && delivery.reason !== undefined) {
        stats.invalid++;
        stats.invalidByReason[delivery.reason] = (stats.invalidByReason[delivery.reason] ?? 0) + 1;
      }
      if (delivery.route === 'failures') stats.failures++;
      if (delivery.seq < newestSent) stats.reordered++;
      newestSent = Math.max(newestSent, delivery.seq);
      // Each newer webhook sent brings the held-back older ones closer to going out.
      for (const entry of held.splice(0)) {
        if (entry.delivery.seq < delivery.seq && --entry.after <= 0) ready.push(entry.delivery);
        else held.push(entry);
      }
    }

    function dispatch(delivery: Outgoing): void {
      countFirstSend(delivery);
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
        onRetry: () => {
          stats.deliveries++;
          stats.retriedAfterFailure++;
        },
        onAttempted: (_attempt, result) => {
          firstAttemptDone();
          if (result.ok) return;
          stats.lastAttemptFailure = result.failure;
          deps.onAttemptFailed?.(result.failure);
          if (!failed) {
            failed = true;
            stats.retrying++;
          }
        },
      }).then((outcome) => {
        firstAttemptDone();
        if (failed) stats.retrying--;
        if (outcome.status === 'acknowledged') {
          if (!delivery.isDuplicate) {
            stats.acknowledged++;
            acknowledged.add(delivery.id);
          }
          if (delivery.duplicate === 'same-bytes')
            ready.push({ ...delivery, duplicate: undefined, isDuplicate: true });
          if (delivery.duplicate === 'reserialized') {
            stats.reserialized++;
            const body = reserialize(delivery.body, decide);
            ready.push(outgoing({ ...delivery, body, duplicate: undefined, isDuplicate: true }));
          }
        } else if (outcome.status === 'gave-up') {
          if (delivery.isDuplicate) stats.duplicatesGaveUp++;
          else {
            stats.gaveUp++;
            gaveUp.add(delivery.id);
          }
          lastFailure = outcome.lastFailure;
        } else {
          stats.interrupted++;
        }
        open--;
        wakeUp();
      });
    }

    /** The next delivery to send, or 'wait' when there is none yet, or undefined when there is none ever. */
    function nextDelivery(): Outgoing | 'wait' | undefined {
      const released = ready.shift();
      if (released) return released;
      if (count === undefined || generated < count) {
        const made = generator.next(nextIntent());
        generated++;
        const delivery = outgoing({
          id: made.id,
          body: made.body,
          seq: made.seq,
          isDuplicate: false,
          route: made.route,
          ...(made.reason === undefined ? {} : { reason: made.reason }),
        });
        if (duplicated.next() === 0) delivery.duplicate = decide.chance(0.3) ? 'reserialized' : 'same-bytes';
        if (heldBack.next() === 0) {
          held.push({ delivery, after: decide.int(1, 3) });
          return nextDelivery();
        }
        return delivery;
      }
      // Every webhook is generated: the held-back ones go now (each has seen a newer one sent).
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
      invalidByReason: { ...stats.invalidByReason },
      elapsedMs: now() - stats.startedAt,
      acknowledgedIds: [...acknowledged],
      gaveUpIds: [...gaveUp],
      ...(lastFailure === undefined ? {} : { lastFailure }),
    };
  }

  return { stats, run };
}
