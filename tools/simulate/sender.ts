// Delivers one webhook as the platform does: POST with its headers, 200 within the timeout or it counts
// as failed, then retries of the same bytes on the back-off schedule until acknowledged or given up.
import { setTimeout as delay } from 'node:timers/promises';
import { signBody } from '../../ingest/webhooks/signature.js';
import type { Limiter } from './limiter.js';
import { nextAttemptAt, type RetryPolicy } from './retry-schedule.js';

/** §4.1 and §9: the platform's User-Agent carries its version. */
export const PLATFORM_USER_AGENT = 'Platform-Webhooks/1.4.2';

/** The request headers of one delivery; signed (§5) when there is a key. */
export function deliveryHeaders(body: string, key: string | undefined): Record<string, string> {
  return {
    'Content-Type': 'application/json',
    Accept: '*/*',
    'User-Agent': PLATFORM_USER_AGENT,
    ...(key === undefined ? {} : { 'X-Signature': signBody(body, key) }),
  };
}

export type AttemptResult = { ok: true } | { ok: false; failure: string };

/** One POST. Anything but a 200 within the timeout is a failure, described in a few words. */
export async function attemptDelivery(
  url: string,
  body: string,
  headers: Record<string, string>,
  {
    timeoutMs,
    fetch = globalThis.fetch,
    signal,
  }: { timeoutMs: number; fetch?: typeof globalThis.fetch; signal?: AbortSignal },
): Promise<AttemptResult> {
  // One controller for both the timeout and the stop, its listener removed after: AbortSignal.any
  // would keep a signal per request alive for as long as the run's stop signal lives.
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, timeoutMs);
  const stop = () => controller.abort();
  signal?.addEventListener('abort', stop, { once: true });
  try {
    const response = await fetch(url, {
      method: 'POST',
      headers,
      body,
      signal: controller.signal,
      redirect: 'manual',
    });
    // The response body is not used (§4.1); drop it so the connection is freed.
    await response.body?.cancel().catch(() => {});
    return response.status === 200 ? { ok: true } : { ok: false, failure: `HTTP ${response.status}` };
  } catch (error) {
    if (timedOut) return { ok: false, failure: `no answer within ${timeoutMs} ms` };
    if (signal?.aborted) return { ok: false, failure: 'interrupted' };
    const cause = (error as Error & { cause?: { code?: string; message?: string } }).cause;
    return { ok: false, failure: cause?.code ?? cause?.message ?? (error as Error).message };
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', stop);
  }
}

export interface OutgoingDelivery {
  id: string;
  body: string;
  headers: Record<string, string>;
}

export type DeliveryOutcome =
  | { status: 'acknowledged'; attempts: number }
  | { status: 'gave-up'; attempts: number; lastFailure: string }
  | { status: 'interrupted'; attempts: number };

export interface SenderOptions {
  url: string;
  timeoutMs: number;
  policy: RetryPolicy;
  /** Jitter. */
  random: () => number;
  limiter: Limiter;
  fetch?: typeof globalThis.fetch;
  now?: () => number;
  /** Aborts waits and requests when the run is stopped. */
  signal: AbortSignal;
  /** Called before each retry is sent (not before the first attempt). */
  onRetry?: (failure: string) => void;
  /** Called after each attempt that got an answer or failed on its own (not one the stop interrupted). */
  onAttempted?: (attempt: number, result: AttemptResult) => void;
}

/** Sends a delivery until it is acknowledged, its retry window ends, or the run is stopped. */
export async function deliver(
  delivery: OutgoingDelivery,
  {
    url,
    timeoutMs,
    policy,
    random,
    limiter,
    fetch,
    now = Date.now,
    signal,
    onRetry,
    onAttempted,
  }: SenderOptions,
): Promise<DeliveryOutcome> {
  const firstAttemptAt = now();
  let attempts = 0;
  let lastFailure = '';
  for (;;) {
    if (attempts > 0) onRetry?.(lastFailure);
    await limiter.acquire();
    if (signal.aborted) {
      limiter.release();
      return { status: 'interrupted', attempts };
    }
    let result: AttemptResult;
    try {
      attempts++;
      result = await attemptDelivery(url, delivery.body, delivery.headers, { timeoutMs, fetch, signal });
    } finally {
      limiter.release();
    }
    if (signal.aborted && !result.ok) return { status: 'interrupted', attempts };
    onAttempted?.(attempts, result);
    if (result.ok) return { status: 'acknowledged', attempts };
    lastFailure = result.failure;
    const at = nextAttemptAt(firstAttemptAt, now(), attempts, policy, random);
    if (at === undefined) return { status: 'gave-up', attempts, lastFailure };
    try {
      await delay(Math.max(0, at - now()), undefined, { signal });
    } catch {
      return { status: 'interrupted', attempts };
    }
  }
}
