// The start-up check that the schema registry answers the Confluent API, so a wrong or stopped registry
// is one line within seconds rather than a client that retries in the background.
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { StartupError } from '../runtime/startup-error.js';
import type { RegistryAccess } from './registry-access.js';

const REASONS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host not found',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ECONNRESET: 'connection reset',
};

/** GET <url>/subjects: the status it answered, or why there was no answer. */
function getSubjects(
  access: RegistryAccess,
  timeoutMs: number,
): Promise<{ status?: number; problem?: string }> {
  const url = new URL(`${access.registryUrl.replace(/\/+$/, '')}/subjects`);
  const headers: Record<string, string> = { accept: 'application/vnd.schemaregistry.v1+json' };
  if (access.auth)
    headers.authorization = `Basic ${Buffer.from(`${access.auth.username}:${access.auth.password}`).toString('base64')}`;
  if (access.bearerToken) headers.authorization = `Bearer ${access.bearerToken}`;
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve) => {
    const req = send(url, { method: 'GET', headers, ...(access.ca ? { ca: access.ca } : {}) }, (response) => {
      response.resume();
      clearTimeout(timer);
      resolve({ status: response.statusCode ?? 0 });
    });
    const timer = setTimeout(() => {
      req.destroy();
      resolve({ problem: `no answer within ${timeoutMs / 1000} s` });
    }, timeoutMs);
    req.once('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      resolve({ problem: REASONS[error.code ?? ''] ?? error.code ?? error.message });
    });
    req.end();
  });
}

/** Resolves once the registry answered GET /subjects with 200; throws a one-line StartupError otherwise. */
export async function assertRegistryReachable(
  access: RegistryAccess,
  { timeoutMs = 5_000, variable = 'SCHEMA_REGISTRY_URL' }: { timeoutMs?: number; variable?: string } = {},
): Promise<void> {
  const where = `schema registry at ${access.registryUrl}`;
  const { status, problem } = await getSubjects(access, timeoutMs);
  if (problem !== undefined) throw new StartupError(`${where} cannot be reached: ${problem} (${variable})`);
  if (status === 401 || status === 403) {
    const login = access.bearerToken
      ? 'SCHEMA_REGISTRY_BEARER_TOKEN'
      : access.auth
        ? 'SCHEMA_REGISTRY_USERNAME and SCHEMA_REGISTRY_PASSWORD'
        : 'no login given: SCHEMA_REGISTRY_USERNAME/_PASSWORD or SCHEMA_REGISTRY_BEARER_TOKEN';
    throw new StartupError(`${where} refused the request (${status}): check its login (${login})`);
  }
  if (status !== 200)
    throw new StartupError(
      `${where} answered ${status} to GET /subjects: is it a Confluent-API registry? (${variable})`,
    );
}
