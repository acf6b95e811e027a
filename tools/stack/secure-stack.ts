// The secured local stack (`stack up --secure`, startStack({ secure: true })): one Kafka node with a
// SASL_SSL listener (SCRAM-SHA-512, a certificate from a CA of its own) beside its PLAINTEXT one, and the
// registry over HTTPS only (a certificate from the same CA) behind HTTP basic auth. Clients get the
// SASL_SSL address, the https registry URL and the variables to log in with; the registry's own Kafka
// connection and the stack's Kafka checks use the PLAINTEXT listener.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../../runtime/log.js';
import { ensureArtifacts, requireJava } from './artifacts.js';
import {
  certificateAuthorityIn,
  createCertificateAuthority,
  createServerCertificate,
} from './certificates.js';
import { createKafkaNode, type KafkaNode } from './kafka-process.js';
import type { KafkaRelease } from './kafka-versions.js';
import { freePort } from './ports.js';
import { type RegistryOnKafka, startRegistryOnKafka } from './registry-on-kafka.js';
import type { RegistryNode, RegistryTls } from './registry-process.js';
import {
  type OAuthValidation,
  oauthAllowedUrlsFlag,
  oauthClientEnv,
  registryBasicAuthProperties,
  type SecureStackSecrets,
  scramFormatArgs,
  secureClientEnv,
  secureListenerProperties,
} from './secure-properties.js';
import { createSigningKey, jwks, type SigningKey } from './token-endpoint.js';
import { createTokenEndpointNode, type TokenEndpointNode } from './token-endpoint-process.js';

export interface SecureLocalStack {
  kafka: KafkaNode;
  registry: RegistryNode;
  /** The SASL_SSL listener: what KAFKA_BROKERS holds for clients. */
  brokers: string[];
  /** KAFKA_SECURITY_PROTOCOL, KAFKA_SASL_*, KAFKA_SSL_CA_FILE, SCHEMA_REGISTRY_USERNAME/_PASSWORD/_CA_FILE. */
  clientEnv: Record<string, string>;
  /** The same, logging in to Kafka with OAUTHBEARER through the stack's token endpoint instead of SCRAM. */
  oauthClientEnv: Record<string, string>;
  tokenEndpoint: TokenEndpointNode;
  stop(): Promise<void>;
}

/** What a restart must find again: the same ports, passwords, certificates and signing key. */
interface SecureFile extends SecureStackSecrets {
  port: number;
  caFile: string;
  keystorePem: string;
  oauth: SecureOAuth;
}

/** OAUTHBEARER on the SASL_SSL listener: the token endpoint's port, its one client, the key it signs with. */
interface SecureOAuth extends OAuthValidation {
  port: number;
  clientId: string;
  clientSecret: string;
  signingKey: SigningKey;
}

export function securePaths(stateDir: string) {
  const dir = join(stateDir, 'secure');
  return { dir, file: join(dir, 'secure.json'), jwks: join(dir, 'jwks.json') };
}

/** The secured stack's ports, secrets, certificates and signing key: made once per state dir, then reused. */
async function prepare(stateDir: string): Promise<SecureFile> {
  const paths = securePaths(stateDir);
  let secure: SecureFile | undefined;
  try {
    secure = JSON.parse(await readFile(paths.file, 'utf8')) as SecureFile;
  } catch {}
  if (secure?.oauth) return secure;
  if (!secure) {
    const ca = await createCertificateAuthority(paths.dir);
    const broker = await createServerCertificate(paths.dir, ca);
    secure = {
      username: 'hookledger',
      kafkaPassword: randomBytes(18).toString('base64url'),
      registryPassword: randomBytes(18).toString('base64url'),
      port: await freePort(),
      caFile: ca.certFile,
      keystorePem: broker.keystorePem,
    } as SecureFile;
  }
  // Also for a state dir made before the stack spoke OAUTHBEARER.
  const signingKey = createSigningKey(`hookledger-${randomBytes(4).toString('hex')}`);
  secure.oauth = {
    port: await freePort(),
    clientId: 'hookledger',
    clientSecret: randomBytes(18).toString('base64url'),
    signingKey,
    jwksFile: paths.jwks,
    issuer: 'hookledger-local-stack',
    audience: 'kafka',
  };
  await writeFile(paths.jwks, `${JSON.stringify(jwks(signingKey), null, 2)}\n`);
  await writeFile(paths.file, `${JSON.stringify(secure, null, 2)}\n`, { mode: 0o600 });
  return secure;
}

/**
 * The registry's certificate, signed by the stack's CA: made at the first start that needs it (also in a
 * state dir made before the registry served HTTPS), then reused.
 */
async function registryCertificate(stateDir: string, caFile: string): Promise<RegistryTls> {
  const { dir } = securePaths(stateDir);
  const tls = { certFile: join(dir, 'registry.pem'), keyFile: join(dir, 'registry.key'), caFile };
  if (!existsSync(tls.certFile) || !existsSync(tls.keyFile))
    await createServerCertificate(dir, certificateAuthorityIn(dir), 'registry');
  return tls;
}

export async function startSecureLocalStack(options: {
  stateDir: string;
  env: NodeJS.ProcessEnv;
  release: KafkaRelease;
  logger: Logger;
  detached: boolean;
}): Promise<SecureLocalStack> {
  const { stateDir, env, release, logger, detached } = options;
  const [artifacts, java, secure] = await Promise.all([
    ensureArtifacts({ env, logger, release }),
    requireJava(env),
    prepare(stateDir),
  ]);
  const registryTls = await registryCertificate(stateDir, secure.caFile);
  const kafka = await createKafkaNode({
    stateDir,
    artifacts,
    java: java.path,
    logger,
    detached,
    extraProperties: (base) =>
      secureListenerProperties(base, {
        port: secure.port,
        keystorePem: secure.keystorePem,
        oauth: secure.oauth,
      }),
    jvmOptions: [oauthAllowedUrlsFlag(secure.oauth)],
    formatArgs: scramFormatArgs(secure),
  });
  const tokenEndpoint = createTokenEndpointNode({
    stateDir,
    endpoint: {
      host: '127.0.0.1',
      port: secure.oauth.port,
      signingKey: secure.oauth.signingKey,
      issuer: {
        issuer: secure.oauth.issuer,
        audience: secure.oauth.audience,
        keyId: secure.oauth.signingKey.keyId,
      },
      clients: { [secure.oauth.clientId]: secure.oauth.clientSecret },
    },
    logger,
    detached,
  });
  // First: the broker does not need it (it reads the key set from a file), but every OAUTHBEARER client does.
  await tokenEndpoint.start();
  try {
    await kafka.start();
  } catch (error) {
    await tokenEndpoint.stop();
    throw error;
  }
  let registryOnKafka: RegistryOnKafka;
  try {
    registryOnKafka = await startRegistryOnKafka(kafka, {
      stateDir,
      artifacts,
      java: java.path,
      logger,
      detached,
      extraProperties: registryBasicAuthProperties(secure),
      credentials: { username: secure.username, password: secure.registryPassword },
      tls: registryTls,
    });
  } catch (error) {
    await tokenEndpoint.stop();
    throw error;
  }
  const started = registryOnKafka;
  const { clientId, clientSecret } = secure.oauth;
  return {
    kafka,
    registry: started.registry,
    tokenEndpoint,
    brokers: [`127.0.0.1:${secure.port}`],
    clientEnv: secureClientEnv(secure, secure.caFile),
    oauthClientEnv: oauthClientEnv(secure, secure.caFile, {
      tokenUrl: tokenEndpoint.url,
      clientId,
      clientSecret,
    }),
    async stop() {
      await started.stop();
      await tokenEndpoint.stop();
    },
  };
}
