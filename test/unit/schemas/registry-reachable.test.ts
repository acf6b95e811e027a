// The start-up check against an https registry: a certificate TLS does not trust is one line naming
// SCHEMA_REGISTRY_CA_FILE (or the URL), never a bare OpenSSL code.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer as createHttpServer, type IncomingHttpHeaders } from 'node:http';
import { createServer, type Server } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registryGet } from '../../../schemas/registry-get.js';
import { assertRegistryReachable, certificateProblem } from '../../../schemas/registry-reachable.js';
import { createCertificateAuthority, createServerCertificate } from '../../../tools/stack/certificates.js';
import { CERTIFICATE_PEM } from '../kafka/pem-fixtures.js';

describe('what TLS held against the registry certificate', () => {
  it('says which variable to set for a certificate it does not trust', () => {
    const untrusted = {
      code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
      message: 'unable to verify the first certificate',
    };
    expect(certificateProblem(untrusted, false)).toBe(
      'its certificate is not trusted (unable to verify the first certificate): set SCHEMA_REGISTRY_CA_FILE to the CA that signed it',
    );
    expect(certificateProblem(untrusted, true)).toBe(
      'its certificate is not trusted (unable to verify the first certificate): it is not signed by a CA in SCHEMA_REGISTRY_CA_FILE',
    );
    for (const code of [
      'SELF_SIGNED_CERT_IN_CHAIN',
      'DEPTH_ZERO_SELF_SIGNED_CERT',
      'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
    ])
      expect(certificateProblem({ code, message: 'm' }, false)).toMatch(/set SCHEMA_REGISTRY_CA_FILE/);
  });

  it('points at the URL for a certificate of another host, and at the certificate for one out of date', () => {
    const altname = {
      code: 'ERR_TLS_CERT_ALTNAME_INVALID',
      message: "Hostname/IP does not match certificate's altnames",
    };
    expect(certificateProblem(altname, true)).toMatch(/not for this address .*\(SCHEMA_REGISTRY_URL\)$/);
    expect(certificateProblem({ code: 'CERT_HAS_EXPIRED', message: 'certificate has expired' }, true)).toBe(
      "its certificate is not valid now (certificate has expired): renew it, or check this machine's clock",
    );
  });

  it('leaves errors that are not about the certificate to the caller', () => {
    expect(certificateProblem({ code: 'ECONNREFUSED', message: 'refused' }, false)).toBeUndefined();
    expect(certificateProblem({ message: 'no code' }, true)).toBeUndefined();
  });
});

describe('asking an https registry', () => {
  let dir: string;
  let server: Server;
  let registryUrl: string;
  let ca: Buffer;
  let seen: IncomingHttpHeaders | undefined;

  beforeAll(async () => {
    // As the secured local stack makes them: a CA of its own, and a certificate it signs for 127.0.0.1.
    dir = await mkdtemp(join(tmpdir(), 'hookledger-registry-tls-'));
    const authority = await createCertificateAuthority(dir);
    const certificate = await createServerCertificate(dir, authority, 'registry');
    ca = await readFile(authority.certFile);
    server = createServer(
      { cert: await readFile(certificate.certFile), key: await readFile(certificate.keyFile) },
      (request, response) => {
        seen = request.headers;
        response.writeHead(200).end('[]');
      },
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    registryUrl = `https://127.0.0.1:${(server.address() as { port: number }).port}/apis/ccompat/v7`;
  }, 60_000);

  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve));
    await rm(dir, { recursive: true, force: true });
  });

  it('stops with one line naming SCHEMA_REGISTRY_CA_FILE and the URL when no CA is given', async () => {
    await expect(assertRegistryReachable({ registryUrl })).rejects.toThrow(
      `schema registry at ${registryUrl}: its certificate is not trusted (unable to verify the first certificate): set SCHEMA_REGISTRY_CA_FILE to the CA that signed it`,
    );
  });

  it('stops with one line when SCHEMA_REGISTRY_CA_FILE holds another CA', async () => {
    await expect(assertRegistryReachable({ registryUrl, ca: Buffer.from(CERTIFICATE_PEM) })).rejects.toThrow(
      `schema registry at ${registryUrl}: its certificate is not trusted (unable to verify the first certificate): it is not signed by a CA in SCHEMA_REGISTRY_CA_FILE`,
    );
  });

  it('passes with the CA that signed it, sending the login', async () => {
    await expect(
      assertRegistryReachable({ registryUrl, ca, auth: { username: 'u', password: 'p' } }),
    ).resolves.toBeUndefined();
    expect(seen?.authorization).toBe(`Basic ${Buffer.from('u:p').toString('base64')}`);
    const localhost = new URL(registryUrl.replace('127.0.0.1', 'localhost'));
    expect(await registryGet(localhost, { ca, bearerToken: 't0k' }, 5_000)).toEqual({ status: 200 });
    expect(seen?.authorization).toBe('Bearer t0k');
  });

  it('says an https URL reaches a registry that does not speak TLS', async () => {
    const plain = createHttpServer((_request, response) => response.end());
    await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve));
    const port = (plain.address() as { port: number }).port;
    try {
      await expect(assertRegistryReachable({ registryUrl: `https://127.0.0.1:${port}` })).rejects.toThrow(
        'cannot be reached: no TLS handshake (does it serve https?) (SCHEMA_REGISTRY_URL)',
      );
    } finally {
      await new Promise((resolve) => plain.close(resolve));
    }
  });
});
