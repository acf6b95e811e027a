// Waiting until Kafka and the registry really answer: a metadata request; the registry's readiness and /subjects.
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { createTopicAdmin } from '../../runtime/kafka/rdkafka-admin.js';

export interface WaitOptions {
  timeoutMs: number;
  /** Resolves if the process died meanwhile: stop waiting at once instead of at the timeout. */
  exited?: Promise<void>;
}

/** HTTP basic auth for a registry that asks for it (the secured stack's). */
export interface RegistryCredentials {
  username: string;
  password: string;
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

function basicAuth(credentials: RegistryCredentials | undefined): Record<string, string> {
  if (!credentials) return {};
  const token = Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64');
  return { authorization: `Basic ${token}` };
}

/** GET <registry>/subjects answers 200: the ccompat API is up and its storage is readable. */
export async function registryAnswers(
  registryUrl: string,
  timeoutMs = 2_000,
  credentials?: RegistryCredentials,
): Promise<boolean> {
  try {
    const response = await fetch(`${registryUrl}/subjects`, {
      headers: basicAuth(credentials),
      signal: AbortSignal.timeout(timeoutMs),
    });
    await response.body?.cancel();
    return response.status === 200;
  } catch {
    return false;
  }
}

/**
 * Apicurio's readiness, `GET /health/ready` beside the API, answers 200 only once its storage is ready.
 * For KafkaSQL that is once it has replayed its journal from Kafka up to a marker it wrote on start;
 * until then `/subjects` already answers 200 from a partly rebuilt store, and registering a schema it
 * has not read back yet creates the subject a second time: 409 "An artifact with ID … already exists".
 */
export async function registryStorageReady(
  registryUrl: string,
  timeoutMs = 2_000,
  credentials?: RegistryCredentials,
): Promise<boolean> {
  try {
    const response = await fetch(new URL('/health/ready', registryUrl), {
      headers: basicAuth(credentials),
      signal: AbortSignal.timeout(timeoutMs),
    });
    await response.body?.cancel();
    return response.status === 200;
  } catch {
    return false;
  }
}

/** Until the registry serves what it stored: its storage is ready, and the Confluent API answers. */
export function waitForRegistry(
  registryUrl: string,
  options: WaitOptions & { credentials?: RegistryCredentials },
): Promise<WaitOutcome> {
  return poll(
    async () =>
      (await registryStorageReady(registryUrl, 2_000, options.credentials)) &&
      (await registryAnswers(registryUrl, 2_000, options.credentials)),
    options,
  );
}
