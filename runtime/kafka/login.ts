// Waits for a librdkafka client to be logged in before it sends requests that could block for long. On a
// connection whose login the broker refused (wrong credentials, an untrusted certificate), librdkafka
// retries a request until its timeout, and the binding waits for it in a libuv worker thread that
// nothing cancels: not a disconnect (it waits for the lock the request holds), not even process.exit
// (Node joins the worker threads on the way out). Asking with short metadata requests first bounds what
// a refusal leaves running to one short request.
import type { Metadata } from '@confluentinc/kafka-javascript';
import { call, KafkaError, type RdAdminClient, toKafkaError } from './rdkafka.js';
import { AUTHENTICATION_FAILED, TLS_FAILED } from './security-failures.js';

export interface LoginOptions {
  /** How long to wait for an answer in all, as the requests that follow would. */
  timeoutMs: number;
  /** Each metadata request's timeout: the most a refused login leaves running. */
  probeMs?: number;
}

/**
 * Resolves once the cluster answers a metadata request (so it accepted the login); rejects with the
 * client's security failure once `refused` does, or with the last request's error after `timeoutMs`, in
 * either case once no request of its own is running.
 */
export async function awaitLogin(
  client: RdAdminClient,
  refused: Promise<never>,
  { timeoutMs, probeMs = 500 }: LoginOptions,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let wasRefused = false;
  refused.catch(() => {
    wasRefused = true;
  });
  for (;;) {
    const asked = Date.now();
    const timeout = Math.max(1, Math.min(probeMs, deadline - asked));
    // Without a topic and with allTopics false, a metadata request is about the brokers only.
    const request = call<Metadata>('connect', (cb) => client.getMetadata({ allTopics: false, timeout }, cb));
    try {
      await Promise.race([request, refused]);
      return;
    } catch (error) {
      if (wasRefused || Date.now() >= deadline) {
        // Settled only once the request is over: the client can then be disconnected at once.
        await request.catch(() => undefined);
        throw toKafkaError(error, 'connect');
      }
      // A request that failed at once (no broker up yet) is asked again after the probe's time, not in a
      // spin; a refusal meanwhile ends the wait (no request of ours is running then).
      const early = Math.min(asked + timeout, deadline) - Date.now();
      if (early > 0) {
        try {
          await Promise.race([new Promise((resolve) => setTimeout(resolve, early)), refused]);
        } catch (refusal) {
          throw toKafkaError(refusal, 'connect');
        }
      }
    }
  }
}

/** The cluster refused the login or its certificate is not trusted: retrying will not fix it. */
export function isLoginRefused(error: unknown): boolean {
  return error instanceof KafkaError && (error.code === AUTHENTICATION_FAILED || error.code === TLS_FAILED);
}
