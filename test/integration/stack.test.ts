import { execFile, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { withAdmin } from '../../runtime/kafka/admin.js';
import { ensureTopics } from '../../runtime/kafka/ensure-topics.js';
import { ensureArtifacts, requireJava } from '../../tools/stack/artifacts.js';
import { pidAlive, waitForPidExit } from '../../tools/stack/jvm-process.js';
import { KAFKA_TOOLS, kafkaToolClass } from '../../tools/stack/kafka-tools.js';
import { kafkaRelease } from '../../tools/stack/kafka-versions.js';
import {
  kafkaToolJvmArgs,
  logConfigFileName,
  renderProperties,
  toolsLogConfig,
} from '../../tools/stack/properties.js';
import { produceAll, readFromStart, testSettings } from '../helpers/rdkafka-io.js';
import { type DedicatedBroker, startDedicatedBroker, testStack } from '../helpers/stack.js';

const run = promisify(execFile);

describe('a dedicated broker', () => {
  let broker: DedicatedBroker | undefined;
  afterAll(async () => {
    await broker?.dispose();
  });

  it('restarts on the same port with its topics and records, and leaves no process once stopped', async () => {
    broker = await startDedicatedBroker();
    // HOOKLEDGER_KAFKA_VERSION reaches the workers: a 4.1 run breaks 4.1 brokers, not 3.9 ones.
    expect(broker.kafkaVersion).toBe(kafkaRelease().version);
    const { brokers } = broker;
    const settings = testSettings(brokers, 'stack-test');
    const topic = `stack-test-${randomUUID()}`;
    await withAdmin(settings, (admin) =>
      ensureTopics(admin, [{ name: topic, partitions: 2, replicationFactor: 1, configs: {} }]),
    );
    await produceAll(
      settings,
      topic,
      ['one', 'two', 'three'].map((value) => ({ key: value, value })),
    );
    const pidBefore = broker.pid();

    await broker.restartKafka();

    expect(broker.brokers).toEqual(brokers);
    expect(broker.pid()).not.toBe(pidBefore);
    if (pidBefore !== undefined) expect(pidAlive(pidBefore)).toBe(false);
    const read = await readFromStart(settings, topic, 3);
    expect(read.map((m) => m.value?.toString()).sort()).toEqual(['one', 'three', 'two']);

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
    // Made here, not by the owner: removed in `finally` even if the owner dies before it says where.
    const stateDir = await mkdtemp(join(tmpdir(), 'hookledger-orphan-'));
    const script = [
      `import { startDedicatedKafka } from ${JSON.stringify(index)};`,
      `const stateDir = ${JSON.stringify(stateDir)};`,
      `const kafka = await startDedicatedKafka({ stateDir, env: { ...process.env, HOOKLEDGER_STACK: 'local' } });`,
      `console.log(JSON.stringify({ kind: kafka.kind, pid: kafka.pid() }));`,
      `setInterval(() => {}, 1000);`,
    ].join('\n');
    const owner = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
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
      const { kind, pid } = JSON.parse(line) as { kind: string; pid: number };
      expect(kind).toBe('local');
      expect(pidAlive(pid)).toBe(true);

      owner.kill('SIGKILL');

      expect(await waitForPidExit(pid, 30_000)).toBe(true);
    } finally {
      owner.kill('SIGKILL');
      await rm(stateDir, { recursive: true, force: true });
    }
  });
});

// `hookledger stack kafka-tool` names a main class per version (Kafka 4 moved some): each must load.
describe("Kafka's CLI tools", () => {
  it('each start from the jars of the Kafka version this run uses', async ({ skip }) => {
    if (testStack().kind !== 'local') skip();
    const [artifacts, java] = await Promise.all([ensureArtifacts(), requireJava()]);
    const { kafka, kafkaLib } = artifacts;
    const dir = await mkdtemp(join(tmpdir(), 'hookledger-tools-'));
    try {
      const logConfig = join(dir, logConfigFileName(kafka.logging, 'tools'));
      await writeFile(logConfig, renderProperties(toolsLogConfig(kafka.logging)));
      for (const tool of Object.keys(KAFKA_TOOLS)) {
        const args = kafkaToolJvmArgs(
          { logging: kafka.logging, kafkaLib, logConfig },
          kafkaToolClass(tool, kafka)!,
          ['--help'],
        );
        // Some tools exit 1 after their help: only a class that does not load is a failure here.
        const output = await run(java.path, args, { timeout: 60_000 }).then(
          ({ stdout, stderr }) => `${stdout}${stderr}`,
          (error: { stdout?: string; stderr?: string }) => `${error.stdout ?? ''}${error.stderr ?? ''}`,
        );
        expect(output, `${tool} on Kafka ${kafka.version}`).not.toMatch(
          /Could not find or load main class|ClassNotFoundException|NoClassDefFoundError/,
        );
        expect(output.length, `${tool} printed its help`).toBeGreaterThan(0);
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
