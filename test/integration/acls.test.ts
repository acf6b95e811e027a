// docs/security.md's one set of PREFIXED ACLs is enough: on a broker that authorizes every request
// (StandardAuthorizer, nothing allowed without an ACL), a principal granted only those ACLs runs config
// check, topics, ingest, both processors, tail, redrive, quarantine list, replay and replay diff; one
// without them is refused. A dedicated broker (a local JVM); the shared registry.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startIngest } from '../../ingest/main.js';
import { parseSources } from '../../ingest/sources.js';
import { startProcessors } from '../../processors/main.js';
import { loadConfig } from '../../runtime/config.js';
import { runTail } from '../../tools/cli/commands/tail.js';
import { ensureArtifacts, kafkaRelease, requireJava, runKafkaTool } from '../../tools/stack/index.js';
import { freePort } from '../../tools/stack/ports.js';
import { type DedicatedBroker, startDedicatedBroker, testStack } from '../helpers/stack.js';
import { quietLogger } from './ingest-harness.js';

const BIN = resolve(import.meta.dirname, '../../tools/cli/hookledger.js');
const prefix = `acl-${randomBytes(4).toString('hex')}.`;
const USERS = { hookledger: 'hl-secret', stranger: 'st-secret' };

let broker: DedicatedBroker;
let saslPort: number;
const closers: (() => Promise<void>)[] = [];

function env(user: keyof typeof USERS = 'hookledger'): Record<string, string> {
  return {
    KAFKA_BROKERS: `127.0.0.1:${saslPort}`,
    KAFKA_SECURITY_PROTOCOL: 'SASL_PLAINTEXT',
    KAFKA_SASL_MECHANISM: 'PLAIN',
    KAFKA_SASL_USERNAME: user,
    KAFKA_SASL_PASSWORD: USERS[user],
    SCHEMA_REGISTRY_URL: testStack().registryUrl,
    TOPIC_PREFIX: prefix,
    TOPIC_PARTITIONS: '1',
    HOOKLEDGER_LOCAL_STACK: 'true',
    LOG_LEVEL: 'warn',
    INGEST_HOST: '127.0.0.1',
    INGEST_PORT: '0',
    PROCESSOR_HOST: '127.0.0.1',
    PROCESSOR_PORT: '0',
    INGEST_OPS_HOST: '127.0.0.1',
    INGEST_OPS_PORT: '0',
    HOOKLEDGER_SOURCES: '{"sandbox":{"signature":"none"}}',
    INGEST_UNSIGNED_SOURCES: 'sandbox',
  };
}

function cli(args: string[], user: keyof typeof USERS = 'hookledger') {
  return new Promise<{ code: number; stdout: string; stderr: string }>((done) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      {
        encoding: 'utf8',
        timeout: 120_000,
        env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env(user) },
      },
      (error, stdout, stderr) => done({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** kafka-acls.sh, as the super user on the PLAINTEXT listener. */
async function grant(args: string[]): Promise<void> {
  const release = kafkaRelease(process.env);
  const [artifacts, java] = await Promise.all([
    ensureArtifacts({ env: process.env, logger: quietLogger(), release }),
    requireJava(process.env),
  ]);
  const code = await runKafkaTool({
    tool: 'acls',
    args: [
      '--bootstrap-server',
      broker.brokers.join(','),
      '--add',
      '--allow-principal',
      'User:hookledger',
      ...args,
    ],
    artifacts,
    java: java.path,
  });
  expect(code).toBe(0);
}

beforeAll(async () => {
  saslPort = await freePort();
  broker = await startDedicatedBroker(1, {
    extraProperties: (base) => ({
      ...base,
      listeners: `${base.listeners},SASL_PLAINTEXT://127.0.0.1:${saslPort}`,
      'advertised.listeners': `${base['advertised.listeners']},SASL_PLAINTEXT://127.0.0.1:${saslPort}`,
      'listener.security.protocol.map': `${base['listener.security.protocol.map']},SASL_PLAINTEXT:SASL_PLAINTEXT`,
      'sasl.enabled.mechanisms': 'PLAIN',
      'listener.name.sasl_plaintext.sasl.enabled.mechanisms': 'PLAIN',
      'listener.name.sasl_plaintext.plain.sasl.jaas.config': `org.apache.kafka.common.security.plain.PlainLoginModule required ${Object.entries(
        USERS,
      )
        .map(([user, password]) => `user_${user}="${password}"`)
        .join(' ')};`,
      'authorizer.class.name': 'org.apache.kafka.metadata.authorizer.StandardAuthorizer',
      // The PLAINTEXT listeners (controller, inter-broker, the stack's probe) act as the super user.
      'super.users': 'User:ANONYMOUS',
      'allow.everyone.if.no.acl.found': 'false',
    }),
  });
  const prefixed = ['--resource-pattern-type', 'prefixed'];
  await grant([
    ...prefixed,
    '--topic',
    prefix,
    ...['Read', 'Write', 'Describe', 'DescribeConfigs', 'Create'].flatMap((o) => ['--operation', o]),
  ]);
  await grant([
    ...prefixed,
    '--group',
    `${prefix}hookledger-`,
    '--operation',
    'Read',
    '--operation',
    'Describe',
  ]);
  await grant([
    ...prefixed,
    '--transactional-id',
    `${prefix}hookledger-`,
    '--operation',
    'Write',
    '--operation',
    'Describe',
  ]);
  await grant(['--cluster', '--operation', 'DescribeConfigs']);
}, 300_000);

afterAll(async () => {
  for (const close of closers.reverse()) await close();
  await broker?.dispose();
  for (const query of ['', '?permanent=true']) {
    const subjects = (await (await fetch(`${testStack().registryUrl}/subjects`)).json()) as string[];
    for (const subject of subjects.filter((s) => s.startsWith(prefix)))
      await fetch(`${testStack().registryUrl}/subjects/${encodeURIComponent(subject)}${query}`, {
        method: 'DELETE',
      });
  }
});

async function tailLines(args: string[]): Promise<Record<string, unknown>[]> {
  let out = '';
  await runTail(args, {
    stdout: { write: (t: string) => (out += t) },
    env: env(),
    signal: new AbortController().signal,
  });
  return out
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line));
}

describe('the prefixed ACLs of docs/security.md', () => {
  it('are all a principal needs to run hookledger, and a principal without them is refused', async () => {
    // The broker authorizes: a principal with no ACL is refused.
    const refused = await cli(['topics', '--check'], 'stranger');
    expect(refused.code, refused.stderr).toBe(3);
    expect(refused.stderr).toMatch(/^hookledger: Kafka at .*authoriz/i);

    const check = await cli(['config', 'check', '--connect', '--json']);
    expect(check.code, check.stdout + check.stderr).toBe(0);
    const topics = await cli(['topics', '--local', '--replication-factor', '1']);
    expect(topics.code, topics.stderr).toBe(0);

    const config = loadConfig(env());
    const processors = await startProcessors({ config, logger: quietLogger() });
    closers.push(() => processors.close());
    const ingest = await startIngest({
      config,
      sources: parseSources(env().HOOKLEDGER_SOURCES!),
      logger: quietLogger(),
    });
    closers.push(() => ingest.close());
    for (let ready = false, end = Date.now() + 60_000; !ready; ) {
      ready = (await fetch(`${ingest.opsUrl}/readyz`)).status === 200;
      if (!ready && Date.now() > end) throw new Error('ingest not ready');
      if (!ready) await new Promise((r) => setTimeout(r, 200));
    }
    const response = await fetch(`${ingest.url}/webhooks/sandbox`, {
      method: 'POST',
      body: JSON.stringify({ webhook: { id: 'wh_acl', trigger: 'UserAdded', date: '2026-11-26T09:00:00Z' } }),
      headers: { 'content-type': 'application/json' },
    });
    expect(response.status).toBe(200);

    // The router routes it (its group, transactional id, changelog), and tail reads it.
    let unique: Record<string, unknown>[] = [];
    for (const end = Date.now() + 90_000; unique.length === 0; ) {
      unique = await tailLines(['webhooks.unique', '--from-beginning']);
      if (unique.length === 0 && Date.now() > end) throw new Error('wh_acl never reached webhooks.unique');
      if (unique.length === 0) await new Promise((r) => setTimeout(r, 500));
    }
    expect(unique.map((line) => line.key)).toEqual(['wh_acl']);
    // Both stages run: restored, in their groups, committing transactions.
    const readyz = await fetch(`${processors.ops.url}/readyz`);
    expect(readyz.status, await readyz.text()).toBe(200);
    expect(processors.stages.map((stage) => stage.app.failure())).toEqual([undefined, undefined]);

    for (const args of [
      ['redrive', '--dry-run', '--json'],
      ['quarantine', 'list', '--json'],
      ['replay', '--id', 'acl1', '--stage', 'dedupe-router'],
      ['replay', 'diff', '--id', 'acl1', '--json'],
    ]) {
      const result = await cli(args);
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(0);
    }
  });
});
