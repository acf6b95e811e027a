// The secured local stack (`stack up --secure`, startStack({ secure: true })): one Kafka node with a
// SASL_SSL listener (SCRAM-SHA-512, a certificate from a CA of its own) beside its PLAINTEXT one, and the
// registry behind HTTP basic auth. Clients get the SASL_SSL address and the variables to log in with;
// the registry's own Kafka connection and the stack's readiness checks use the PLAINTEXT listener.
import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../../runtime/log.js';
import { ensureArtifacts, requireJava } from './artifacts.js';
import { createCertificateAuthority, createServerCertificate } from './certificates.js';
import { createKafkaNode, type KafkaNode } from './kafka-process.js';
import type { KafkaRelease } from './kafka-versions.js';
import { freePort } from './ports.js';
import { createRegistryNode, type RegistryNode } from './registry-process.js';
import {
  registryBasicAuthProperties,
  type SecureStackSecrets,
  scramFormatArgs,
  secureClientEnv,
  secureListenerProperties,
} from './secure-properties.js';

export interface SecureLocalStack {
  kafka: KafkaNode;
  registry: RegistryNode;
  /** The SASL_SSL listener: what KAFKA_BROKERS holds for clients. */
  brokers: string[];
  /** KAFKA_SECURITY_PROTOCOL, KAFKA_SASL_*, KAFKA_SSL_CA_FILE, SCHEMA_REGISTRY_USERNAME/_PASSWORD. */
  clientEnv: Record<string, string>;
  stop(): Promise<void>;
}

/** What a restart must find again: the same port, passwords and certificates. */
interface SecureFile extends SecureStackSecrets {
  port: number;
  caFile: string;
  keystorePem: string;
}

export function securePaths(stateDir: string) {
  const dir = join(stateDir, 'secure');
  return { dir, file: join(dir, 'secure.json') };
}

/** The secured stack's port, secrets and certificates: made once per state dir, then reused. */
async function prepare(stateDir: string): Promise<SecureFile> {
  const paths = securePaths(stateDir);
  try {
    return JSON.parse(await readFile(paths.file, 'utf8')) as SecureFile;
  } catch {}
  const ca = await createCertificateAuthority(paths.dir);
  const broker = await createServerCertificate(paths.dir, ca);
  const secure: SecureFile = {
    username: 'hookledger',
    kafkaPassword: randomBytes(18).toString('base64url'),
    registryPassword: randomBytes(18).toString('base64url'),
    port: await freePort(),
    caFile: ca.certFile,
    keystorePem: broker.keystorePem,
  };
  await writeFile(paths.file, `${JSON.stringify(secure, null, 2)}\n`, { mode: 0o600 });
  return secure;
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
  const kafka = await createKafkaNode({
    stateDir,
    artifacts,
    java: java.path,
    logger,
    detached,
    extraProperties: (base) =>
      secureListenerProperties(base, { port: secure.port, keystorePem: secure.keystorePem }),
    formatArgs: scramFormatArgs(secure),
  });
  await kafka.start();
  let registry: RegistryNode;
  try {
    registry = await createRegistryNode({
      stateDir,
      artifacts,
      java: java.path,
      brokers: kafka.brokers,
      logger,
      detached,
      extraProperties: registryBasicAuthProperties(secure),
      credentials: { username: secure.username, password: secure.registryPassword },
    });
    await registry.start();
  } catch (error) {
    await kafka.stop();
    throw error;
  }
  const started = registry;
  return {
    kafka,
    registry: started,
    brokers: [`127.0.0.1:${secure.port}`],
    clientEnv: secureClientEnv(secure, secure.caFile),
    async stop() {
      await started.stop();
      await kafka.stop();
    },
  };
}
