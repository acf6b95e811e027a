// The start-up check that the schema registry answers the Confluent API, so a wrong or stopped registry
// is one line within seconds rather than a client that retries in the background.
import { StartupError } from '../runtime/startup-error.js';
import type { RegistryAccess } from './registry-access.js';
import { registryGet } from './registry-get.js';

const REASONS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host not found',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ECONNRESET: 'connection reset',
  // An https URL for a registry that speaks plain HTTP: OpenSSL reads its answer as a bad record.
  EPROTO: 'no TLS handshake (does it serve https?)',
};

/** OpenSSL's verdicts on a certificate chain, as Node reports them (UNABLE_TO_VERIFY_LEAF_SIGNATURE, …). */
const UNTRUSTED = /^(UNABLE_TO_|SELF_SIGNED_|DEPTH_ZERO_SELF_SIGNED|CERT_(SIGNATURE|UNTRUSTED|REJECTED))/;
const OUT_OF_DATE = /^CERT_(HAS_EXPIRED|NOT_YET_VALID)$/;

/**
 * What TLS held against the registry's certificate, and what to change: the CA (SCHEMA_REGISTRY_CA_FILE),
 * the address (SCHEMA_REGISTRY_URL) or the certificate itself. Undefined for errors that are not about it.
 */
export function certificateProblem(
  error: { code?: string; message: string },
  caGiven: boolean,
): string | undefined {
  const code = error.code ?? '';
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID')
    return `its certificate is not for this address (${error.message}) (SCHEMA_REGISTRY_URL)`;
  if (OUT_OF_DATE.test(code))
    return `its certificate is not valid now (${error.message}): renew it, or check this machine's clock`;
  if (!UNTRUSTED.test(code)) return undefined;
  return caGiven
    ? `its certificate is not trusted (${error.message}): it is not signed by a CA in SCHEMA_REGISTRY_CA_FILE`
    : `its certificate is not trusted (${error.message}): set SCHEMA_REGISTRY_CA_FILE to the CA that signed it`;
}

/** Resolves once the registry answered GET /subjects with 200; throws a one-line StartupError otherwise. */
export async function assertRegistryReachable(
  access: RegistryAccess,
  { timeoutMs = 5_000, variable = 'SCHEMA_REGISTRY_URL' }: { timeoutMs?: number; variable?: string } = {},
): Promise<void> {
  const where = `schema registry at ${access.registryUrl}`;
  const answer = await registryGet(
    new URL(`${access.registryUrl.replace(/\/+$/, '')}/subjects`),
    access,
    timeoutMs,
  );
  if ('timedOut' in answer)
    throw new StartupError(
      `${where} cannot be reached: no answer within ${timeoutMs / 1000} s (${variable})`,
    );
  if ('error' in answer) {
    const { error } = answer;
    const certificate = certificateProblem(error, access.ca !== undefined);
    if (certificate !== undefined) throw new StartupError(`${where}: ${certificate}`);
    const problem = REASONS[error.code ?? ''] ?? error.code ?? error.message;
    throw new StartupError(`${where} cannot be reached: ${problem} (${variable})`);
  }
  const { status } = answer;
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
