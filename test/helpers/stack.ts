// What integration tests know about the shared stack, and dedicated brokers for tests that break one.
import { existsSync, readFileSync } from 'node:fs';
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

/** What the global setup writes once the shared stack is up, or has failed to start. */
export type SharedStackOutcome = { started: true; stack: TestStack } | { started: false; error: string };

declare module 'vitest' {
  export interface ProvidedContext {
    /** Where the global setup writes the shared stack's SharedStackOutcome. */
    hookledgerStackFile: string;
  }
}

/** A stack boot on a busy two-core machine takes under a minute; this is how long a file waits for it. */
const SHARED_STACK_WAIT_MS = 300_000;

function sharedStackOutcome(): SharedStackOutcome | undefined {
  const file = inject('hookledgerStackFile');
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as SharedStackOutcome) : undefined;
}

function startedStack(outcome: SharedStackOutcome): TestStack {
  if (!outcome.started) throw new Error(`the shared test stack did not start: ${outcome.error}`);
  return outcome.stack;
}

/** Waits for the shared stack the global setup is starting (shared-stack-ready.ts, before each file). */
export async function waitForSharedStack(): Promise<TestStack> {
  const deadline = Date.now() + SHARED_STACK_WAIT_MS;
  for (;;) {
    const outcome = sharedStackOutcome();
    if (outcome) return startedStack(outcome);
    if (Date.now() > deadline)
      throw new Error(`the shared test stack was not up after ${SHARED_STACK_WAIT_MS / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/**
 * The shared broker and registry. Every test file uses them at once: use random topic and group names,
 * and never stop or restart this broker (take a dedicated one for that).
 */
export function testStack(): TestStack {
  const outcome = sharedStackOutcome();
  if (!outcome)
    throw new Error(
      'the shared test stack is not up yet (the setup file shared-stack-ready.ts waits for it)',
    );
  return startedStack(outcome);
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
