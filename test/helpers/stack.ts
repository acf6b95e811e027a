// What integration tests know about the shared stack, and dedicated brokers for tests that break one.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inject } from 'vitest';
import {
  type DedicatedKafka,
  type Stack,
  type StackKind,
  startDedicatedKafka,
  startStack,
} from '../../tools/stack/index.js';
import type { Properties } from '../../tools/stack/properties.js';

/** The shared stack the global setup started (or found through KAFKA_BROKERS / SCHEMA_REGISTRY_URL). */
export interface TestStack {
  kind: StackKind;
  brokers: string[];
  registryUrl: string;
  /** HOOKLEDGER_KAFKA_VERSION's broker; undefined for a configured stack (its version is not ours to know). */
  kafkaVersion?: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    hookledgerStack: TestStack;
  }
}

/**
 * The shared broker and registry. Every test file uses them at once: use random topic and group names,
 * and never stop or restart this broker (take a dedicated one for that).
 */
export function testStack(): TestStack {
  return inject('hookledgerStack');
}

export interface DedicatedBroker extends DedicatedKafka {
  /** Stops the broker and deletes its state: call it in `afterAll`/`finally`. */
  dispose(): Promise<void>;
}

/**
 * A broker of its own (Kafka only, own ports and data) for fault tests: stop, start and restart it freely.
 * Local JVM or container, whichever the machine offers (a configured stack cannot provide one). With
 * `brokers` > 1, a local KRaft cluster (RF 3, min.insync.replicas 2) whose nodes fail one at a time.
 */
export async function startDedicatedBroker(
  brokers = 1,
  options: { extraProperties?: (base: Properties) => Properties } = {},
): Promise<DedicatedBroker> {
  const stateDir = await mkdtemp(join(tmpdir(), 'hookledger-broker-'));
  try {
    const kafka = await startDedicatedKafka({
      stateDir,
      brokers,
      // Changed properties: a local JVM's server.properties (a container has none).
      ...(options.extraProperties
        ? { extraProperties: options.extraProperties, env: { ...process.env, HOOKLEDGER_STACK: 'local' } }
        : {}),
    });
    return Object.assign(kafka, {
      async dispose() {
        try {
          await kafka.stop();
        } finally {
          await rm(stateDir, { recursive: true, force: true });
        }
      },
    });
  } catch (error) {
    await rm(stateDir, { recursive: true, force: true });
    throw error;
  }
}

export interface DedicatedStack extends Stack {
  /** Stops both JVMs (a frozen registry is woken to stop) and deletes the state: in `afterAll`/`finally`. */
  dispose(): Promise<void>;
}

/**
 * A broker and a registry of their own, as local JVMs (their registry can be killed, frozen and started
 * again on the same address, which a Docker registry cannot), for tests that break the registry: never
 * the shared one, which every test file uses at once.
 */
export async function startDedicatedStack(): Promise<DedicatedStack> {
  const stateDir = await mkdtemp(join(tmpdir(), 'hookledger-dedicated-stack-'));
  // Not the shared stack the global setup configured: a stack of its own.
  const { KAFKA_BROKERS, SCHEMA_REGISTRY_URL, ...env } = process.env;
  try {
    const stack = await startStack({ stateDir, env: { ...env, HOOKLEDGER_STACK: 'local' } });
    return Object.assign(stack, {
      async dispose() {
        try {
          await stack.stop();
        } finally {
          await rm(stateDir, { recursive: true, force: true });
        }
      },
    });
  } catch (error) {
    await rm(stateDir, { recursive: true, force: true });
    throw error;
  }
}
