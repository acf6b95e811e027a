// The drain before a graceful stop: readiness fails first, the listener keeps serving for a delay.
import type { Logger } from '../runtime/log.js';

export interface Drain {
  /** True once the drain began: /readyz answers 503 from then on. */
  readonly draining: boolean;
  /**
   * Fails readiness and resolves after the delay, during which requests are still answered: whoever
   * routes to this instance (a Kubernetes Service, a load balancer's health check) stops meanwhile.
   * Calling it again returns the same wait.
   */
  begin(): Promise<void>;
}

export interface DrainOptions {
  /** INGEST_DRAIN_DELAY_MS; 0 closes at once. */
  delayMs: number;
  logger?: Logger;
  sleep?: (ms: number) => Promise<void>;
}

const wait = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export function createDrain({ delayMs, logger, sleep = wait }: DrainOptions): Drain {
  let started: Promise<void> | undefined;
  return {
    get draining() {
      return started !== undefined;
    },
    begin() {
      started ??= (async () => {
        if (delayMs === 0) return;
        logger?.info({ delayMs }, 'draining: /readyz fails, requests are still served until the delay ends');
        await sleep(delayMs);
      })();
      return started;
    },
  };
}
