// Waiting until Kafka and the registry really answer: a metadata request; the registry's readiness and /subjects.
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { createTopicAdmin } from '../../runtime/kafka/rdkafka-admin.js';
import type { RegistryAccess } from '../../schemas/registry-access.js';
import { registryGet } from '../../schemas/registry-get.js';

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

/** A 200 to GET `url` within `timeoutMs`, with the registry's login and CA. */
async function answers200(url: URL, access: RegistryAccess, timeoutMs: number): Promise<boolean> {
  const answer = await registryGet(url, access, timeoutMs);
  return 'status' in answer && answer.status === 200;
}

/** GET <registry>/subjects answers 200: the ccompat API is up and its storage is readable. */
export function registryAnswers(access: RegistryAccess, timeoutMs = 2_000): Promise<boolean> {
  return answers200(new URL(`${access.registryUrl}/subjects`), access, timeoutMs);
}

/**
 * Apicurio's readiness, `GET /health/ready` beside the API (and over TLS with it: its build keeps
 * Quarkus's management interface off, so health is served by the main server), answers 200 only once
 * its storage is ready. For KafkaSQL that is once it has replayed its journal from Kafka up to a marker
 * it wrote on start; until then `/subjects` already answers 200 from a partly rebuilt store, and
 * registering a schema it has not read back yet creates the subject a second time: 409 "An artifact
 * with ID … already exists".
 */
export function registryStorageReady(access: RegistryAccess, timeoutMs = 2_000): Promise<boolean> {
  return answers200(new URL('/health/ready', access.registryUrl), access, timeoutMs);
}

/** Until the registry serves what it stored: its storage is ready, and the Confluent API answers. */
export function waitForRegistry(access: RegistryAccess, options: WaitOptions): Promise<WaitOutcome> {
  return poll(async () => (await registryStorageReady(access)) && (await registryAnswers(access)), options);
}
