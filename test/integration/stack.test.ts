import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, describe, expect, it } from 'vitest';
import { pidAlive, waitForPidExit } from '../../tools/stack/jvm-process.js';
import { type DedicatedBroker, startDedicatedBroker, testStack } from '../helpers/stack.js';

const client = (brokers: string[]) =>
  new Kafka({ clientId: 'stack-test', brokers, logLevel: logLevel.NOTHING, retry: { retries: 8 } });

async function readAll(brokers: string[], topic: string, count: number): Promise<string[]> {
  const consumer = client(brokers).consumer({ groupId: `stack-test-${randomUUID()}` });
  const values: string[] = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    const done = new Promise<void>((resolve) => {
      void consumer.run({
        eachMessage: async ({ message }) => {
          values.push(message.value?.toString() ?? '');
          if (values.length >= count) resolve();
        },
      });
    });
    await Promise.race([done, sleep(30_000)]);
  } finally {
    await consumer.disconnect();
  }
  return values;
}

describe('a dedicated broker', () => {
  let broker: DedicatedBroker | undefined;
  afterAll(async () => {
    await broker?.dispose();
  });

  it('restarts on the same port with its topics and records, and leaves no process once stopped', async () => {
    broker = await startDedicatedBroker();
    const { brokers } = broker;
    const topic = `stack-test-${randomUUID()}`;
    const admin = client(brokers).admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic, numPartitions: 2 }], waitForLeaders: true });
    await admin.disconnect();
    const producer = client(brokers).producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    await producer.send({
      topic,
      acks: -1,
      messages: ['one', 'two', 'three'].map((value) => ({ key: value, value })),
    });
    await producer.disconnect();
    const pidBefore = broker.pid();

    await broker.restartKafka();

    expect(broker.brokers).toEqual(brokers);
    expect(broker.pid()).not.toBe(pidBefore);
    if (pidBefore !== undefined) expect(pidAlive(pidBefore)).toBe(false);
    expect((await readAll(brokers, topic, 3)).sort()).toEqual(['one', 'three', 'two']);

    const pid = broker.pid();
    await broker.dispose();
    broker = undefined;
    if (pid !== undefined) expect(pidAlive(pid)).toBe(false);
  });
});

describe('the shared stack', () => {
  it('has a registry that answers the Confluent API and gives a schema back by its id', async () => {
    const { registryUrl } = testStack();
    const subject = `stack-test-${randomUUID()}-value`;
    const schema = JSON.stringify({
      type: 'record',
      name: 'Probe',
      fields: [{ name: 'id', type: 'string' }],
    });
    const registered = await fetch(`${registryUrl}/subjects/${subject}/versions`, {
      method: 'POST',
      headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' },
      body: JSON.stringify({ schema }),
    });
    expect(registered.status).toBe(200);
    const { id } = (await registered.json()) as { id: number };
    const byId = await fetch(`${registryUrl}/schemas/ids/${id}`);
    expect(byId.status).toBe(200);
    expect(JSON.parse(((await byId.json()) as { schema: string }).schema)).toEqual(JSON.parse(schema));
  });
});

// A SIGKILLed owner cannot clean up: the supervisor must notice and stop the JVM. The supervisor is what
// keeps local JVMs from outliving their owner (Docker containers have Ryuk), so this always runs a local
// JVM, whichever stack the other tests use.
describe('a local broker whose owner is killed', () => {
  it('is stopped by its supervisor, even after SIGKILL of the owner', async () => {
    const index = fileURLToPath(new URL('../../tools/stack/index.ts', import.meta.url));
    const script = [
      `import { mkdtempSync } from 'node:fs';`,
      `import { tmpdir } from 'node:os';`,
      `import { join } from 'node:path';`,
      `import { startDedicatedKafka } from ${JSON.stringify(index)};`,
      `const stateDir = mkdtempSync(join(tmpdir(), 'hookledger-orphan-'));`,
      `const kafka = await startDedicatedKafka({ stateDir, env: { ...process.env, HOOKLEDGER_STACK: 'local' } });`,
      `console.log(JSON.stringify({ kind: kafka.kind, pid: kafka.pid(), stateDir }));`,
      `setInterval(() => {}, 1000);`,
    ].join('\n');
    const owner = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let stateDir: string | undefined;
    try {
      const line = await new Promise<string>((resolve, reject) => {
        let out = '';
        owner.stdout.on('data', (chunk: Buffer) => {
          out += chunk.toString();
          if (out.includes('\n')) resolve(out.split('\n')[0]!);
        });
        owner.once('exit', (code) =>
          reject(new Error(`owner exited with ${code} before the broker was ready`)),
        );
      });
      const started = JSON.parse(line) as { kind: string; pid: number; stateDir: string };
      const { kind, pid } = started;
      stateDir = started.stateDir;
      expect(kind).toBe('local');
      expect(pidAlive(pid)).toBe(true);

      owner.kill('SIGKILL');

      expect(await waitForPidExit(pid, 30_000)).toBe(true);
    } finally {
      owner.kill('SIGKILL');
      if (stateDir) await rm(stateDir, { recursive: true, force: true });
    }
  });
});
