// A production-like cluster: Kafka only over SASL_SSL (SCRAM-SHA-512, a CA of its own) and the registry
// only over HTTPS (a certificate from the same CA) behind HTTP basic auth, on a secured stack of this
// file's own. Ingest → processors → tail run through it with the connection variables alone; a wrong
// password, an unknown CA and an unreachable broker stop a command at start with one line, within seconds.
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signBody } from '../../ingest/webhooks/signature.js';
import { startProcessors } from '../../processors/main.js';
import { loadConfig } from '../../runtime/config.js';
import { registryGet } from '../../schemas/registry-get.js';
import { runTail } from '../../tools/cli/commands/tail.js';
import { setUpTopics } from '../../tools/cli/commands/topics.js';
import { createCertificateAuthority } from '../../tools/stack/certificates.js';
import { type Stack, startStack } from '../../tools/stack/index.js';
import { freePort } from '../../tools/stack/ports.js';
import { createSigningKey, startTokenEndpoint } from '../../tools/stack/token-endpoint.js';
import { type IngestUnderTest, runIngest } from './ingest-harness.js';
import { quietLogger, randomPrefix } from './processors-harness.js';

const KEY = 'secured-cluster-key-0123456789abcdef0123456789';
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
   * before the clients' 10 s request timeouts would have.
   */
  const withinSeconds = ({ ms }: { ms: number }) =>
    expect(ms - startupMs, `said in ${ms} ms, of which ${startupMs} ms to start`).toBeLessThan(8_000);
  /**
   * And the process ends right after its line: no client request left waiting out its 10 s timeout in
   * librdkafka's binding (which even process.exit waits for) after the cluster refused the login.
   */
  const exitsAfterItsLine = ({ ms, exitMs }: { ms: number; exitMs: number }) =>
    expect(exitMs - ms, `said in ${ms} ms, exited in ${exitMs} ms`).toBeLessThan(5_000);

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
    const ca = await readFile(env.SCHEMA_REGISTRY_CA_FILE!);
    const anonymous = await registryGet(new URL(`${env.SCHEMA_REGISTRY_URL}/subjects`), { ca }, 10_000);
    expect(anonymous).toEqual({ status: 401 });
  });

  it('serves the registry over HTTPS only, with a certificate from the CA it hands out', async () => {
    expect(env.SCHEMA_REGISTRY_URL).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/apis\/ccompat\/v7$/);
    expect(env.SCHEMA_REGISTRY_CA_FILE).toBe(env.KAFKA_SSL_CA_FILE);
    const ca = await readFile(env.SCHEMA_REGISTRY_CA_FILE!);
    const login = { username: env.SCHEMA_REGISTRY_USERNAME!, password: env.SCHEMA_REGISTRY_PASSWORD! };
    for (const host of ['127.0.0.1', 'localhost']) {
      const url = new URL(`${env.SCHEMA_REGISTRY_URL}/subjects`);
      url.hostname = host;
      expect(await registryGet(url, { auth: login, ca }, 10_000), host).toEqual({ status: 200 });
    }
    // The same port in plain HTTP: a TLS server, so no HTTP answer at all.
    const plain = await registryGet(
      new URL(env.SCHEMA_REGISTRY_URL!.replace(/^https:/, 'http:')),
      {},
      10_000,
    );
    expect(plain).not.toHaveProperty('status');
  });

  /** Ingest on the stack with the source `secured`, logging in with `clientEnv`. */
  const securedIngest = (clientEnv: Record<string, string>) =>
    runIngest({
      brokers: stack!.brokers,
      registryUrl: stack!.registryUrl,
      prefix,
      sources: { secured: { keys: { k1: KEY } } },
      env: clientEnv,
    });

  /**
   * Ingest → processors → tail with nothing but `clientEnv` (and the stack's addresses): each delivery
   * posted twice, each id once in webhooks.unique and its user once in entity.user.
   */
  async function carryThrough(clientEnv: Record<string, string>, tag: string) {
    const userEnv = { ...withoutScramLogin(env), ...clientEnv };
    const config = loadConfig({ ...userEnv, PROCESSOR_HOST: '127.0.0.1', PROCESSOR_PORT: '0' });
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
      ingest = await securedIngest(clientEnv);
      const ids = Array.from({ length: USERS }, (_, n) => `wh_${tag}_${n}`);
      for (const [n, id] of ids.entries()) {
        const body = JSON.stringify({
          webhook: { id, trigger: 'UserAdded', date: new Date().toISOString() },
          query: { api: 'https://api.platform.example/v1/graphql', variables: { id: `usr_${tag}_${n}` } },
          data: { getUser: { __typename: 'User', id: `usr_${tag}_${n}` } },
        });
        const headers = { 'content-type': 'application/json', 'x-signature': signBody(body, KEY) };
        // Each delivery twice: the platform's retry, which the router must drop.
        for (let attempt = 0; attempt < 2; attempt++) {
          const response = await ingest.post('/webhooks/secured', body, headers);
          expect(response.status, await response.text()).toBe(200);
        }
      }

      // tail reads through the SASL_SSL listener and decodes through the registry with basic auth.
      const mine = (records: { key: string }[]) => records.filter((r) => r.key.includes(`_${tag}_`));
      const unique = mine(await tailUntil(userEnv, 'webhooks.unique', USERS, (r) => mine(r).length));
      expect(new Set(unique.map((r) => r.key))).toEqual(new Set(ids));
      const users = mine(await tailUntil(userEnv, 'entity.user', USERS, (r) => mine(r).length));
      expect(users.map((r) => r.key).sort()).toEqual(ids.map((_, n) => `secured/usr_${tag}_${n}`).sort());
    } finally {
      await ingest?.close();
      await processors.close();
    }
  }

  it('carries deliveries from ingest through the processors to tail, with the variables alone', async () => {
    await carryThrough(stack!.clientEnv!, 'scram');
  });

  describe('OAUTHBEARER through an OIDC token endpoint', () => {
    /** stack-oauth.env: the same stack, a token from the stack's endpoint instead of a SCRAM password. */
    const oauthEnv = () => ({ ...withoutScramLogin(env), ...stack!.oauthClientEnv! });

    it('hands out a client of the token endpoint and no password', () => {
      const oauth = stack!.oauthClientEnv!;
      expect(oauth.KAFKA_SASL_MECHANISM).toBe('OAUTHBEARER');
      expect(oauth.KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/token$/);
      expect(oauth).not.toHaveProperty('KAFKA_SASL_PASSWORD');
      expect(oauth).not.toHaveProperty('KAFKA_SASL_USERNAME');
    });

    it('carries deliveries from ingest through the processors to tail, logged in with tokens', async () => {
      await carryThrough(stack!.oauthClientEnv!, 'oauth');
    });

    it('checks the topics over its own connection, logged in with a token', async () => {
      // After carryThrough's set-up every topic exists: `topics` reads each one's configs (DescribeConfigs).
      const result = await cli(['topics'], { ...process.env, ...oauthEnv() });
      expect(result.code, result.lines.join('\n')).toBe(0);
      expect(result.lines.join('\n')).not.toMatch(/OAUTHBEARER|refuse|cannot/i);
    });

    it('keeps writing across several token lifetimes: librdkafka refreshes, the broker re-authenticates', async () => {
      // An endpoint with the stack's signing key (the broker trusts it) and 6-second tokens; the broker
      // ends each session when its token expires (connections.max.reauth.ms), so without a refreshed
      // token and a new login ingest's writes would fail within seconds.
      const secure = JSON.parse(await readFile(path.join(stateDir, 'secure', 'secure.json'), 'utf8'));
      const shortLived = await startTokenEndpoint({
        signingKey: secure.oauth.signingKey,
        issuer: {
          issuer: secure.oauth.issuer,
          audience: secure.oauth.audience,
          keyId: secure.oauth.signingKey.keyId,
        },
        clients: { refresher: 'secret' },
        lifetimeSeconds: 6,
      });
      let ingest: IngestUnderTest | undefined;
      try {
        ingest = await securedIngest({
          ...stack!.oauthClientEnv!,
          KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL: shortLived.url,
          KAFKA_SASL_OAUTHBEARER_CLIENT_ID: 'refresher',
          KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET: 'secret',
        });
        const until = Date.now() + 20_000;
        for (let n = 0; Date.now() < until; n++) {
          const body = JSON.stringify({
            webhook: { id: `wh_refresh_${n}`, trigger: 'UserAdded', date: new Date().toISOString() },
            query: { api: 'https://api.platform.example/v1/graphql', variables: { id: `usr_refresh_${n}` } },
            data: { getUser: { __typename: 'User', id: `usr_refresh_${n}` } },
          });
          const headers = { 'content-type': 'application/json', 'x-signature': signBody(body, KEY) };
          const response = await ingest.post('/webhooks/secured', body, headers);
          expect(response.status, `delivery ${n}: ${await response.text()}`).toBe(200);
          await new Promise((resolve) => setTimeout(resolve, 500));
        }
        // One token per client at start, then a new one before each expiry (about every 5 s).
        expect(shortLived.issued()).toBeGreaterThanOrEqual(4);
      } finally {
        await ingest?.close();
        await shortLived.close();
      }
    });

    it('stops at start with one line on a wrong client secret', async () => {
      const result = await cli(['topics', '--dry-run'], {
        ...process.env,
        ...oauthEnv(),
        KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET: 'wrong',
      });
      expect(result.code).toBe(1);
      expect(result.lines).toHaveLength(1);
      expect(result.lines[0]).toMatch(
        /^hookledger: Kafka at .*Failed to retrieve OIDC token from .*\(401\).*KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET/,
      );
      withinSeconds(result);
      exitsAfterItsLine(result);
    });

    it('stops at start with one line when the token endpoint does not answer', async () => {
      const nowhere = `http://127.0.0.1:${await freePort()}/token`;
      const result = await cli(['topics', '--dry-run'], {
        ...process.env,
        ...oauthEnv(),
        KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL: nowhere,
      });
      expect(result.code).toBe(1);
      expect(result.lines).toHaveLength(1);
      expect(result.lines[0]).toContain(`Failed to retrieve OIDC token from "${nowhere}"`);
      expect(result.lines[0]).toMatch(/check KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL/);
      withinSeconds(result);
      exitsAfterItsLine(result);
    });

    it('stops at start with one line when the broker refuses the tokens (a key it does not trust)', async () => {
      // A second identity provider: same issuer and audience, another signing key.
      const other = await startTokenEndpoint({
        signingKey: createSigningKey('not-the-brokers'),
        issuer: { issuer: 'hookledger-local-stack', audience: 'kafka', keyId: 'not-the-brokers' },
        clients: { stranger: 'secret' },
      });
      try {
        const result = await cli(['topics', '--dry-run'], {
          ...process.env,
          ...oauthEnv(),
          KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL: other.url,
          KAFKA_SASL_OAUTHBEARER_CLIENT_ID: 'stranger',
          KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET: 'secret',
        });
        expect(result.code).toBe(1);
        expect(result.lines).toHaveLength(1);
        expect(result.lines[0]).toMatch(
          /SASL authentication error: .*invalid_token.*the broker refused the token/,
        );
        expect(other.issued()).toBeGreaterThan(0);
        withinSeconds(result);
        exitsAfterItsLine(result);
      } finally {
        await other.close();
      }
    });
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
    exitsAfterItsLine(result);
  });

  it('stops process and tail at start with one line on a wrong password, and exits right after it', async () => {
    for (const args of [['process'], ['tail', 'webhooks.raw', '--from-beginning']]) {
      const result = await cli(args, {
        ...process.env,
        ...env,
        KAFKA_SASL_PASSWORD: 'wrong',
        PROCESSOR_HOST: '127.0.0.1',
        PROCESSOR_PORT: '0',
      });
      expect(result.code, args[0]).toBe(1);
      expect(result.lines, args[0]).toHaveLength(1);
      expect(result.lines[0]).toMatch(
        /^hookledger: Kafka at .*SASL authentication error: .*KAFKA_SASL_PASSWORD/,
      );
      withinSeconds(result);
      exitsAfterItsLine(result);
    }
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
    exitsAfterItsLine(result);
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
      INGEST_OPS_PORT: '0',
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
      INGEST_OPS_PORT: '0',
    });
    expect(result.code).toBe(1);
    expect(result.lines).toHaveLength(1);
    expect(result.lines[0]).toMatch(/schema registry at .*401/);
  });

  it("stops at start with one line when the registry's certificate is not trusted (no SCHEMA_REGISTRY_CA_FILE)", async () => {
    const { SCHEMA_REGISTRY_CA_FILE: _ca, ...withoutCa } = env;
    const result = await cli(['topics'], { ...process.env, ...withoutCa });
    expect(result.code).toBe(1);
    expect(result.lines, result.lines.join('\n')).toHaveLength(1);
    expect(result.lines[0]).toBe(
      `hookledger: schema registry at ${env.SCHEMA_REGISTRY_URL}: its certificate is not trusted (unable to verify the first certificate): set SCHEMA_REGISTRY_CA_FILE to the CA that signed it`,
    );
    withinSeconds(result);
  });

  it('stops at start with one line on a registry certificate from a CA other than SCHEMA_REGISTRY_CA_FILE', async () => {
    const other = await createCertificateAuthority(path.join(stateDir, 'other-registry'), 'other-ca');
    const result = await cli(['ingest'], {
      ...process.env,
      ...env,
      SCHEMA_REGISTRY_CA_FILE: other.certFile,
      HOOKLEDGER_SOURCES: JSON.stringify({ secured: { keys: { k1: KEY } } }),
      INGEST_HOST: '127.0.0.1',
      INGEST_PORT: '0',
      INGEST_OPS_PORT: '0',
    });
    expect(result.code).toBe(1);
    expect(result.lines).toHaveLength(1);
    expect(result.lines[0]).toMatch(
      new RegExp(
        `^hookledger: schema registry at ${env.SCHEMA_REGISTRY_URL}: its certificate is not trusted .*SCHEMA_REGISTRY_CA_FILE`,
      ),
    );
    withinSeconds(result);
  });

  it('reads the password from a mounted secret file', async () => {
    const file = path.join(stateDir, 'kafka-password');
    await writeFile(file, `${env.KAFKA_SASL_PASSWORD}\n`);
    const { KAFKA_SASL_PASSWORD: _password, ...rest } = env;
    // Whatever the tests before put there: one record per delivery they carried, and at least the first's.
    const records = await tailUntil({ ...rest, KAFKA_SASL_PASSWORD_FILE: file }, 'webhooks.unique', USERS);
    expect(records.length).toBeGreaterThanOrEqual(USERS);
    expect(new Set(records.map((r) => r.key)).size).toBe(records.length);
  });
});

/** The variables without the SCRAM user: what is left must log in some other way. */
function withoutScramLogin({
  KAFKA_SASL_USERNAME: _user,
  KAFKA_SASL_PASSWORD: _password,
  ...rest
}: Record<string, string>): Record<string, string> {
  return rest;
}

/**
 * `hookledger tail <stream> --from-beginning`, again until `counted` of its records reach `count`
 * (processors are asynchronous), or the time is up.
 */
async function tailUntil(
  env: Record<string, string>,
  stream: string,
  count: number,
  counted: (records: { key: string }[]) => number = (records) => records.length,
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
    if (counted(records) >= count || Date.now() > end) return records;
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
}
