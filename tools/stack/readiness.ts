// Waiting until Kafka and the registry really answer: a metadata request, an HTTP 200 on /subjects.
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { createTopicAdmin } from '../../runtime/kafka/rdkafka-admin.js';

export interface WaitOptions {
  timeoutMs: number;
  /** Resolves if the process died meanwhile: stop waiting at once instead of at the timeout. */
  exited?: Promise<void>;
}

export type WaitOutcome = 'ready' | 'timeout' | 'exited';

async function poll(check: () => Promise<boolean>, { timeoutMs, exited }: WaitOptions): Promise<WaitOutcome> {
  let died = false;
  void exited?.then(() => {
    died = true;
  });
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (died) return 'exited';
    if (await check()) return 'ready';
    if (died) return 'exited';
    await sleep(250);
  }
  return 'timeout';
}

/**
 * One metadata round trip within `timeoutMs`: the broker lists itself. Quiet (a broker still starting
 * refuses connections, which is the expected answer here); the caller polls.
 */
export async function kafkaAnswers(brokers: string[], timeoutMs = 2_000): Promise<boolean> {
  const admin = createTopicAdmin(
    { brokers, clientId: 'hookledger-stack-probe', logger: pino({ level: 'silent' }) },
    { timeoutMs, component: 'stack-probe' },
  );
  try {
    return (await admin.brokers()).length > 0;
  } catch {
    return false;
  } finally {
    admin.close();
  }
}

export function waitForKafka(brokers: string[], options: WaitOptions): Promise<WaitOutcome> {
  return poll(() => kafkaAnswers(brokers), options);
}

/** GET <registry>/subjects answers 200: the ccompat API is up and its storage is readable. */
export async function registryAnswers(registryUrl: string, timeoutMs = 2_000): Promise<boolean> {
  try {
    const response = await fetch(`${registryUrl}/subjects`, { signal: AbortSignal.timeout(timeoutMs) });
    await response.body?.cancel();
    return response.status === 200;
  } catch {
    return false;
  }
}

export function waitForRegistry(registryUrl: string, options: WaitOptions): Promise<WaitOutcome> {
  return poll(() => registryAnswers(registryUrl), options);
}
