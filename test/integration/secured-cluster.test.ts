// A production-like cluster: Kafka only over SASL_SSL (SCRAM-SHA-512, a CA of its own) and the registry
// behind HTTP basic auth, on a secured stack of this file's own. Ingest → processors → tail run through
// it with the connection variables alone; a wrong password, an unknown CA and an unreachable broker stop
// a command at start with one line, within seconds.
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signBody } from '../../ingest/webhooks/signature.js';
import { startProcessors } from '../../processors/main.js';
import { loadConfig } from '../../runtime/config.js';
import { runTail } from '../../tools/cli/commands/tail.js';
import { setUpTopics } from '../../tools/cli/commands/topics.js';
import { createCertificateAuthority } from '../../tools/stack/certificates.js';
import { type Stack, startStack } from '../../tools/stack/index.js';
import { freePort } from '../../tools/stack/ports.js';
import { type IngestUnderTest, runIngest } from './ingest-harness.js';
import { quietLogger, randomPrefix } from './processors-harness.js';

const KEY = 'secured-cluster-key';
const USERS = 12;
const bin = path.resolve(import.meta.dirname, '../../tools/cli/hookledger.js');

/**
 * Runs the CLI as a user would; resolves with its exit code, its stderr lines, and how long it took to
 * say something (its first output) and to exit.
 */
function cli(
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; lines: string[]; ms: number; exitMs: number }> {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [bin, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    let saidMs: number | undefined;
    const said = () => {
      saidMs ??= Date.now() - started;
    };
    child.stdout.on('data', said);
    child.stderr.on('data', (chunk: Buffer) => {
      said();
      stderr += chunk.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      const exitMs = Date.now() - started;
      resolve({ code, lines: stderr.trim().split('\n').filter(Boolean), ms: saidMs ?? exitMs, exitMs });
    });
  });
}

describe('a cluster behind SASL_SSL and a registry behind basic auth', () => {
  let stateDir: string;
  let stack: Stack | undefined;
  /** The variables a user sets for this cluster: brokers, registry, and the connection variables. */
  let env: Record<string, string>;
  const prefix = randomPrefix('secured');
  /** How long the CLI takes to start and print its help on this machine now: the floor of any run. */
  let startupMs = 0;
  /**
   * "Within seconds": the line comes this soon after the process could have done anything at all, well
   * before the clients' 10 s request timeouts would have. (The process itself may end later: librdkafka's
   * binding still waits out the metadata request in flight when the login was refused.)
   */
  const withinSeconds = ({ ms }: { ms: number }) =>
    expect(ms - startupMs, `said in ${ms} ms, of which ${startupMs} ms to start`).toBeLessThan(8_000);

  beforeAll(async () => {
    stateDir = await mkdtemp(path.join(tmpdir(), 'hookledger-secured-'));
    // Its own stack, never the shared one: the global setup's KAFKA_BROKERS must not be taken as configured.
    stack = await startStack({
      stateDir,
      secure: true,
      env: { ...process.env, KAFKA_BROKERS: '', SCHEMA_REGISTRY_URL: '' },
    });
    env = {
      KAFKA_BROKERS: stack.brokers.join(','),
      SCHEMA_REGISTRY_URL: stack.registryUrl,
      ...stack.clientEnv,
      TOPIC_PREFIX: prefix,
      HOOKLEDGER_LOCAL_STACK: 'true',
      LOG_LEVEL: 'silent',
    };
    startupMs = (await cli(['topics', '--help'], { ...process.env, ...env })).ms;
  }, 300_000);

  afterAll(async () => {
    await stack?.stop();
    await rm(stateDir, { recursive: true, force: true });
  });

  it('hands out only the SASL_SSL listener and the credentials to use it', () => {
    expect(env.KAFKA_SECURITY_PROTOCOL).toBe('SASL_SSL');
    expect(env.KAFKA_SASL_MECHANISM).toBe('SCRAM-SHA-512');
    expect(env.KAFKA_SSL_CA_FILE).toMatch(/ca\.pem$/);
    expect(env.SCHEMA_REGISTRY_USERNAME).toBeTruthy();
  });

  it('refuses the registry to anyone without the password', async () => {
    const anonymous = await fetch(`${env.SCHEMA_REGISTRY_URL}/subjects`);
    expect(anonymous.status).toBe(401);
  });

  it('carries deliveries from ingest through the processors to tail, with the variables alone', async () => {
    const config = loadConfig({ ...env, PROCESSOR_HOST: '127.0.0.1', PROCESSOR_PORT: '0' });
    // Topics and schemas: DescribeConfigs over SASL_SSL (our own client) and registrations with basic auth.
    const set = await setUpTopics({
      config,
      logger: quietLogger(),
      local: true,
      partitions: 2,
      warn: () => {},
    });
    expect(set.schemas.length).toBeGreaterThan(0);

    let ingest: IngestUnderTest | undefined;
    const processors = await startProcessors({ config, logger: quietLogger() });
    try {
      ingest = await runIngest({
        brokers: stack!.brokers,
        registryUrl: stack!.registryUrl,
        prefix,
        sources: { secured: { keys: { k1: KEY } } },
        env: { ...stack!.clientEnv },
      });
      const ids = Array.from({ length: USERS }, (_, n) => `wh_sec_${n}`);
      for (const [n, id] of ids.entries()) {
        const body = JSON.stringify({
          webhook: { id, trigger: 'UserAdded', date: new Date().toISOString() },
          query: { api: 'https://api.platform.example/v1/graphql', variables: { id: `usr_${n}` } },
          data: { getUser: { __typename: 'User', id: `usr_${n}` } },
        });
        const headers = { 'content-type': 'application/json', 'x-signature': signBody(body, KEY) };
        // Each delivery twice: the platform's retry, which the router must drop.
        for (let attempt = 0; attempt < 2; attempt++) {
          const response = await ingest.post('/webhooks/secured', body, headers);
          expect(response.status, await response.text()).toBe(200);
        }
      }

      // tail reads through the SASL_SSL listener and decodes through the registry with basic auth.
      const unique = await tailUntil(env, 'webhooks.unique', USERS);
      expect(new Set(unique.map((r) => r.key))).toEqual(new Set(ids));
      const users = await tailUntil(env, 'entity.user', USERS);
      expect(users.map((r) => r.key).sort()).toEqual(ids.map((_, n) => `secured/usr_${n}`).sort());
    } finally {
      await ingest?.close();
      await processors.close();
    }
  });

  it('stops at start with one line on a wrong password', async () => {
    const result = await cli(['topics', '--dry-run'], {
      ...process.env,
      ...env,
      KAFKA_SASL_PASSWORD: 'wrong',
    });
    expect(result.code).toBe(1);
    expect(result.lines).toHaveLength(1);
    expect(result.lines[0]).toMatch(
      new RegExp(
        `^hookledger: Kafka at ${env.KAFKA_BROKERS}: .*SASL authentication error: .*KAFKA_SASL_PASSWORD`,
      ),
    );
    withinSeconds(result);
  });

  it('stops at start with one line on a broker certificate from an unknown CA', async () => {
    const other = await createCertificateAuthority(path.join(stateDir, 'other'), 'other-ca');
    const result = await cli(['topics', '--dry-run'], {
      ...process.env,
      ...env,
      KAFKA_SSL_CA_FILE: other.certFile,
    });
    expect(result.code).toBe(1);
    expect(result.lines).toHaveLength(1);
    expect(result.lines[0]).toMatch(/^hookledger: Kafka at .*certificate verify failed.*KAFKA_SSL_CA_FILE/);
    withinSeconds(result);
  });

  it('stops at start with one line when no broker listens', async () => {
    const nowhere = `127.0.0.1:${await freePort()}`;
    const result = await cli(['ingest'], {
      ...process.env,
      ...env,
      KAFKA_BROKERS: nowhere,
      HOOKLEDGER_SOURCES: JSON.stringify({ secured: { keys: { k1: KEY } } }),
      INGEST_HOST: '127.0.0.1',
      INGEST_PORT: '0',
    });
    expect(result.code).toBe(1);
    expect(result.lines).toHaveLength(1);
    expect(result.lines[0]).toContain(`Kafka at ${nowhere}`);
    withinSeconds(result);
  });

  it('stops at start with one line on a wrong registry password', async () => {
    const result = await cli(['ingest'], {
      ...process.env,
      ...env,
      SCHEMA_REGISTRY_PASSWORD: 'wrong',
      HOOKLEDGER_SOURCES: JSON.stringify({ secured: { keys: { k1: KEY } } }),
      INGEST_HOST: '127.0.0.1',
      INGEST_PORT: '0',
    });
    expect(result.code).toBe(1);
    expect(result.lines).toHaveLength(1);
    expect(result.lines[0]).toMatch(/schema registry at .*401/);
  });

  it('reads the password from a mounted secret file', async () => {
    const file = path.join(stateDir, 'kafka-password');
    await writeFile(file, `${env.KAFKA_SASL_PASSWORD}\n`);
    const { KAFKA_SASL_PASSWORD: _password, ...rest } = env;
    const records = await tailUntil({ ...rest, KAFKA_SASL_PASSWORD_FILE: file }, 'webhooks.unique', USERS);
    expect(records).toHaveLength(USERS);
  });
});

/** `hookledger tail <stream> --from-beginning`, again until it prints `count` records (processors are asynchronous). */
async function tailUntil(
  env: Record<string, string>,
  stream: string,
  count: number,
  timeoutMs = 120_000,
): Promise<{ key: string }[]> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const lines: string[] = [];
    await runTail([stream, '--from-beginning'], {
      env,
      stdout: { write: (text: string) => lines.push(...text.split('\n').filter(Boolean)) },
      signal: new AbortController().signal,
    });
    const records = lines.map((line) => JSON.parse(line) as { key: string });
    if (records.length >= count || Date.now() > end) return records;
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
}
