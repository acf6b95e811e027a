// A 3-broker cluster (RF 3, min.insync.replicas 2) that loses a broker to SIGKILL and gets it back: what
// production looks like when a machine dies. Ingest keeps its promise (a 200 means the record is in
// webhooks.raw; no request waits past the deadline; 503s only while leadership moves) under a sender
// that retries as the platform does, and the router stays exactly-once while its transaction
// coordinator's broker is the one killed.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signBody } from '../../ingest/webhooks/signature.js';
import { dedupeRouterAppId } from '../../processors/dedupe-router/main.js';
import { loadConfig } from '../../runtime/config.js';
import { topicStates, withAdmin } from '../../runtime/kafka/admin.js';
import type { RunningStage } from '../../runtime/streams/stage.js';
import { topicNames } from '../../schemas/topics.js';
import { setUpTopics } from '../../tools/cli/commands/topics.js';
import { actOnKafkaIn, type Stack, startStack } from '../../tools/stack/index.js';
import { testSettings } from '../helpers/rdkafka-io.js';
import { type IngestUnderTest, randomPrefix, readRaw, runIngest } from './ingest-harness.js';
import { expectExactlyOnce, ProcessorsHarness } from './processors-harness.js';
import { generateLoad } from './processors-load.js';

const KEY = 'cluster-key-0123456789abcdef0123456789';
const DEADLINE_MS = 5_000;
/** What a 503 may take beyond the deadline: timers and the event loop on a busy two-core machine. */
const SLACK_MS = 2_000;
/** transaction.state.log.num.partitions of the local stack (tools/stack/properties.ts). */
const TRANSACTION_STATE_PARTITIONS = 10;
/** Three brokers, a registry and the code under test share two cores: losing a broker takes a while. */
const FAULT_TEST_TIMEOUT_MS = 600_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Java's String#hashCode, as Kafka hashes a transactional id to its coordinator's partition. */
function javaHashCode(text: string): number {
  let hash = 0;
  for (let i = 0; i < text.length; i++) hash = (Math.imul(31, hash) + text.charCodeAt(i)) | 0;
  return hash;
}

/** The broker coordinating `transactionalId`: the leader of its __transaction_state partition. */
async function transactionCoordinator(brokers: string[], transactionalId: string): Promise<number> {
  const hash = javaHashCode(transactionalId);
  const partition = (hash === -2147483648 ? 0 : Math.abs(hash)) % TRANSACTION_STATE_PARTITIONS;
  const [state] = await withAdmin(testSettings(brokers), (admin) =>
    admin.describeTopics(['__transaction_state']),
  );
  const leader = state?.partitions.find((p) => p.partition === partition)?.leader;
  if (leader === undefined || leader < 0) throw new Error(`no leader for __transaction_state-${partition}`);
  return leader;
}

/** The broker leading the most partitions of `topic`: killing it moves the most leadership. */
async function busiestLeader(brokers: string[], topic: string): Promise<number> {
  const [state] = await withAdmin(testSettings(brokers), (admin) => admin.describeTopics([topic]));
  const counts = new Map<number, number>();
  for (const p of state!.partitions) counts.set(p.leader, (counts.get(p.leader) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1])[0]![0];
}

interface Attempt {
  id: string;
  status: number;
  startedAt: number;
  ms: number;
  ingestId?: string;
}

describe('a 3-broker cluster losing a broker', () => {
  // What `stack up --brokers 3` starts (its own registry on the cluster), and what `stack kill kafka <n>`
  // and `stack restart kafka <n>` do to it: not the shared single-broker test stack.
  let cluster: Stack;
  let stateDir: string;
  let registryUrl: string;
  const silent = pino({ level: 'silent' });
  const kill = (node: number) => actOnKafkaIn(stateDir, 'kill', { node, logger: silent });
  const restart = (node: number) => actOnKafkaIn(stateDir, 'restart', { node, logger: silent });

  beforeAll(async () => {
    stateDir = await mkdtemp(join(tmpdir(), 'hookledger-cluster-'));
    const env: NodeJS.ProcessEnv = { ...process.env, HOOKLEDGER_STACK: 'local' };
    // The integration run points these at the shared stack; this test starts a stack of its own.
    delete env.KAFKA_BROKERS;
    delete env.SCHEMA_REGISTRY_URL;
    cluster = await startStack({ stateDir, env, brokers: 3, logger: silent });
    registryUrl = cluster.registryUrl;
  });
  afterAll(async () => {
    await cluster?.stop();
    await rm(stateDir, { recursive: true, force: true });
  });

  it('passes `topics` production durability checks without --local', async () => {
    const prefix = randomPrefix('cluster-topics');
    const warnings: string[] = [];
    const config = loadConfig({
      KAFKA_BROKERS: cluster.brokers.join(','),
      SCHEMA_REGISTRY_URL: registryUrl,
      TOPIC_PREFIX: prefix,
    });
    const result = await setUpTopics({
      config,
      logger: pino({ level: 'silent' }),
      local: false,
      partitions: 3,
      warn: (m) => warnings.push(m),
    });
    expect(warnings).toEqual([]);
    expect(result.replicationFactor).toBe(3);
    const raw = topicNames(prefix).raw;
    const states = await withAdmin(testSettings(cluster.brokers), (admin) => topicStates(admin, [raw]));
    expect(states.get(raw)).toMatchObject({ replicationFactor: 3, configs: { 'min.insync.replicas': '2' } });
  });

  it(
    'acknowledges nothing it loses while a broker is SIGKILLed and restarted under a retrying sender',
    async () => {
      const prefix = randomPrefix('cluster-ingest');
      const config = loadConfig({
        KAFKA_BROKERS: cluster.brokers.join(','),
        SCHEMA_REGISTRY_URL: registryUrl,
        TOPIC_PREFIX: prefix,
      });
      await setUpTopics({
        config,
        logger: pino({ level: 'silent' }),
        local: false,
        partitions: 6,
        warn: () => {},
      });
      const ingest: IngestUnderTest = await runIngest({
        brokers: cluster.brokers,
        registryUrl,
        prefix,
        sources: { energy: { keys: { k1: KEY } } },
        env: { INGEST_DEADLINE_MS: String(DEADLINE_MS) },
      });
      const attempts: Attempt[] = [];
      const ids = Array.from({ length: 2_000 }, (_, n) => `wh_cluster_${n}`);
      let killedAt = Number.POSITIVE_INFINITY;
      try {
        // The platform's behaviour, faster: retry each delivery until it gets a 200, honouring no cap.
        const send = async (id: string) => {
          const body = JSON.stringify({
            webhook: { id, trigger: 'UserAdded', date: new Date().toISOString() },
          });
          for (const giveUpAt = Date.now() + 120_000; Date.now() < giveUpAt; ) {
            const startedAt = Date.now();
            const response = await ingest.post('/webhooks/energy', body, {
              'content-type': 'application/json',
              'x-signature': signBody(body, KEY),
            });
            const text = await response.text();
            const attempt: Attempt = { id, status: response.status, startedAt, ms: Date.now() - startedAt };
            if (response.status === 200)
              attempt.ingestId = (JSON.parse(text) as { ingestId: string }).ingestId;
            attempts.push(attempt);
            if (response.status === 200) return;
            await sleep(200);
          }
          throw new Error(`${id}: no 200 within 120 s`);
        };
        let next = 0;
        const worker = async () => {
          while (next < ids.length) await send(ids[next++]!);
        };
        const faults = (async () => {
          while (next < ids.length / 4) await sleep(50);
          const victim = await busiestLeader(cluster.brokers, topicNames(prefix).raw);
          killedAt = Date.now();
          await kill(victim);
          while (next < (ids.length * 3) / 4) await sleep(50);
          await restart(victim);
        })();
        await Promise.all([...Array.from({ length: 16 }, worker), faults]);

        // Every delivery was acknowledged in the end, and no request waited past the deadline.
        const acknowledged = new Set(attempts.filter((a) => a.status === 200).map((a) => a.id));
        expect(acknowledged.size).toBe(ids.length);
        const slow = attempts.filter((a) => a.ms > DEADLINE_MS + SLACK_MS);
        expect(slow).toEqual([]);
        // Refusals are 503s (retry later), and only once the broker was gone: none answered before.
        const refused = attempts.filter((a) => a.status !== 200);
        expect(refused.filter((a) => a.status !== 503)).toEqual([]);
        expect(refused.filter((a) => a.startedAt + a.ms < killedAt)).toEqual([]);
        // With every broker back and leadership settled, deliveries pass at the first attempt again.
        const settled: Attempt[] = [];
        for (let n = 0; n < 50; n++) {
          const id = `wh_cluster_after_${n}`;
          const body = JSON.stringify({
            webhook: { id, trigger: 'UserAdded', date: new Date().toISOString() },
          });
          const response = await ingest.post('/webhooks/energy', body, {
            'content-type': 'application/json',
            'x-signature': signBody(body, KEY),
          });
          const text = await response.text();
          settled.push({
            id,
            status: response.status,
            startedAt: 0,
            ms: 0,
            ...(response.status === 200
              ? { ingestId: (JSON.parse(text) as { ingestId: string }).ingestId }
              : {}),
          });
        }
        expect(settled.map((a) => a.status)).toEqual(settled.map(() => 200));

        // A 200 means the record is in webhooks.raw: every acknowledged attempt's record is there.
        const stored = new Set(
          (await readRaw(cluster.brokers, registryUrl, ingest.rawTopic)).map((r) => r.envelope.ingestId),
        );
        const missing = [...attempts, ...settled].filter((a) => a.status === 200 && !stored.has(a.ingestId!));
        expect(missing).toEqual([]);
      } finally {
        await ingest.close();
      }
    },
    FAULT_TEST_TIMEOUT_MS,
  );

  it(
    "stays exactly-once while the router's transaction coordinator is SIGKILLed and restarted",
    async () => {
      const harness = new ProcessorsHarness(
        { brokers: cluster.brokers, registryUrl },
        randomPrefix('cluster-eos'),
        6,
        { HOOKLEDGER_INSTANCE_ID: 'cluster-test', PROCESSOR_TRANSACTION_TIMEOUT_MS: '10000' },
      );
      await harness.setUp(7 * 86_400_000, 3);
      const load = generateLoad({ ids: 4_000, retries: 2_000, shuffle: true });
      const stages: RunningStage[] = [];
      try {
        stages.push(await harness.startRouter());
        const appId = dedupeRouterAppId(harness.prefix);
        const coordinator = await transactionCoordinator(cluster.brokers, `${appId}-cluster-test`);
        // The load arrives over time, so the router is mid-stream, transactions open, when its
        // coordinator dies, and still running when that broker returns.
        const chunks = 12;
        const size = Math.ceil(load.envelopes.length / chunks);
        for (let chunk = 0; chunk < chunks; chunk++) {
          if (chunk === 3) await kill(coordinator);
          if (chunk === 9) await restart(coordinator);
          await harness.produceRaw(load.envelopes.slice(chunk * size, (chunk + 1) * size));
          await sleep(500);
        }
        await harness.waitCaughtUp(appId, [harness.names.raw], 180_000);
        await expectExactlyOnce(harness, load.ids);
      } finally {
        for (const stage of stages) await stage.close();
      }
    },
    FAULT_TEST_TIMEOUT_MS,
  );
});
