// How to reach the schema registry, from the configuration: its URL, basic auth or a bearer token, and
// a CA for a registry whose certificate no public CA signed. Checked at start, one line naming the variable.
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { type Config, ConfigError } from '../runtime/config.js';

export interface RegistryAccess {
  registryUrl: string;
  /** HTTP basic auth (Confluent Cloud: an API key and its secret). */
  auth?: { username: string; password: string };
  /** `Authorization: Bearer <token>` (a registry behind an OAuth gateway). */
  bearerToken?: string;
  /** PEM CA certificates the registry's TLS certificate must chain to (instead of Node's public ones). */
  ca?: Buffer;
  /** false (SCHEMA_REGISTRY_AUTO_REGISTER=false): `register` only looks the schema up (serde.ts). */
  autoRegister?: boolean;
  /** How long one request may go unanswered before it fails (SCHEMA_REGISTRY_TIMEOUT). */
  timeoutMs?: number;
}

export type RegistryConfig = Pick<
  Config,
  | 'SCHEMA_REGISTRY_URL'
  | 'SCHEMA_REGISTRY_USERNAME'
  | 'SCHEMA_REGISTRY_PASSWORD'
  | 'SCHEMA_REGISTRY_BEARER_TOKEN'
  | 'SCHEMA_REGISTRY_CA_FILE'
> &
  Partial<Pick<Config, 'SCHEMA_REGISTRY_AUTO_REGISTER' | 'SCHEMA_REGISTRY_TIMEOUT'>>;

type ReadFile = (path: string) => Buffer;

export function registryAccess(
  config: RegistryConfig,
  read: ReadFile = (p) => readFileSync(p),
): RegistryAccess {
  const {
    SCHEMA_REGISTRY_URL: registryUrl,
    SCHEMA_REGISTRY_USERNAME: username,
    SCHEMA_REGISTRY_PASSWORD: password,
    SCHEMA_REGISTRY_BEARER_TOKEN: bearerToken,
    SCHEMA_REGISTRY_CA_FILE: caFile,
  } = config;
  const access: RegistryAccess = { registryUrl };
  if (config.SCHEMA_REGISTRY_AUTO_REGISTER === false) access.autoRegister = false;
  if (config.SCHEMA_REGISTRY_TIMEOUT !== undefined) access.timeoutMs = config.SCHEMA_REGISTRY_TIMEOUT;
  if ((username === undefined) !== (password === undefined))
    throw new ConfigError(
      username === undefined
        ? 'SCHEMA_REGISTRY_USERNAME: basic auth needs it with SCHEMA_REGISTRY_PASSWORD; it is not set'
        : 'SCHEMA_REGISTRY_PASSWORD: basic auth needs it (or SCHEMA_REGISTRY_PASSWORD_FILE) with SCHEMA_REGISTRY_USERNAME; it is not set',
    );
  if (username !== undefined && bearerToken !== undefined)
    throw new ConfigError(
      'SCHEMA_REGISTRY_BEARER_TOKEN: set either it or SCHEMA_REGISTRY_USERNAME/_PASSWORD, not both',
    );
  if (username !== undefined && password !== undefined) access.auth = { username, password };
  if (bearerToken !== undefined) access.bearerToken = bearerToken;
  if (caFile !== undefined) {
    if (!registryUrl.toLowerCase().startsWith('https:'))
      throw new ConfigError(
        `SCHEMA_REGISTRY_CA_FILE: set, but SCHEMA_REGISTRY_URL is not https (${registryUrl})`,
      );
    let pem: Buffer;
    try {
      pem = read(caFile);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
      throw new ConfigError(`SCHEMA_REGISTRY_CA_FILE: cannot read ${JSON.stringify(caFile)} (${code})`);
    }
    try {
      new X509Certificate(pem);
    } catch {
      throw new ConfigError(`SCHEMA_REGISTRY_CA_FILE: ${JSON.stringify(caFile)} holds no PEM certificate`);
    }
    access.ca = pem;
  }
  return access;
}
