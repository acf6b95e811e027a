// One GET to the schema registry with its login and CA, for the checks that only need a status: the
// start-up check and the local stack's readiness. node:http(s), since fetch takes no CA of its own.
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { RegistryAccess } from './registry-access.js';

/** The status it answered, or why there was none: the socket's or TLS's error, or no answer in time. */
export type RegistryAnswer = { status: number } | { error: NodeJS.ErrnoException } | { timedOut: true };

/** The Authorization header the access carries, if any. */
export function authorizationHeader(access: Omit<RegistryAccess, 'registryUrl'>): Record<string, string> {
  if (access.bearerToken) return { authorization: `Bearer ${access.bearerToken}` };
  if (!access.auth) return {};
  const token = Buffer.from(`${access.auth.username}:${access.auth.password}`).toString('base64');
  return { authorization: `Basic ${token}` };
}

/** GET `url` (the registry's or beside it, such as /health/ready); the body is read and dropped. */
export function registryGet(
  url: URL,
  access: Omit<RegistryAccess, 'registryUrl'>,
  timeoutMs: number,
): Promise<RegistryAnswer> {
  const headers = { accept: 'application/vnd.schemaregistry.v1+json', ...authorizationHeader(access) };
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve) => {
    const req = send(url, { method: 'GET', headers, ...(access.ca ? { ca: access.ca } : {}) }, (response) => {
      response.resume();
      clearTimeout(timer);
      resolve({ status: response.statusCode ?? 0 });
    });
    const timer = setTimeout(() => {
      req.destroy();
      resolve({ timedOut: true });
    }, timeoutMs);
    req.once('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      resolve({ error });
    });
    req.end();
  });
}
