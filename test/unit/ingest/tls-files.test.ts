// INGEST_TLS_CERT_FILE and INGEST_TLS_KEY_FILE are read and parsed at start: a wrong file is said with
// the variable's name (before, a DER file or the two swapped came out as a stack from the HTTPS server).

import { generateKeyPairSync, X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readTls } from '../../../ingest/main.js';
import { ConfigError } from '../../../runtime/config.js';
import { CERTIFICATE_PEM, ENCRYPTED_KEY_PEM, KEY_PEM } from '../kafka/pem-fixtures.js';

const dir = mkdtempSync(join(tmpdir(), 'ingest-tls-files-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, content: string | Buffer): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

const tls = (cert: string | undefined, key: string | undefined) =>
  readTls({ INGEST_TLS_CERT_FILE: cert, INGEST_TLS_KEY_FILE: key } as never);

describe('the HTTPS certificate and key files', () => {
  const cert = file('cert.pem', CERTIFICATE_PEM);
  const key = file('key.pem', KEY_PEM);

  it('reads a certificate and its key', () => {
    expect(tls(cert, key)).toEqual({ cert: Buffer.from(CERTIFICATE_PEM), key: Buffer.from(KEY_PEM) });
    expect(tls(undefined, undefined)).toBeUndefined();
  });

  it('names the variable of a file that is not PEM, of the two swapped, or of a key not the certificate’s', () => {
    const der = file('cert.der', new X509Certificate(CERTIFICATE_PEM).raw);
    expect(() => tls(der, key)).toThrow(ConfigError);
    expect(() => tls(der, key)).toThrow(/^INGEST_TLS_CERT_FILE: ".*cert\.der" is not a PEM certificate/);
    expect(() => tls(key, cert)).toThrow(/^INGEST_TLS_CERT_FILE: ".*key\.pem" is not a PEM certificate/);
    expect(() => tls(cert, cert)).toThrow(/^INGEST_TLS_KEY_FILE: ".*cert\.pem" is not a PEM private key/);
    const encrypted = file('encrypted.pem', ENCRYPTED_KEY_PEM);
    expect(() => tls(cert, encrypted)).toThrow(/^INGEST_TLS_KEY_FILE: .* is not a PEM private key/);
    const other = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({
      type: 'pkcs8',
      format: 'pem',
    });
    const otherKey = file('other-key.pem', other);
    expect(() => tls(cert, otherKey)).toThrow(
      /^INGEST_TLS_KEY_FILE: ".*other-key\.pem" is not the private key of INGEST_TLS_CERT_FILE's certificate/,
    );
  });

  it('names the variable of a file it cannot read, or the one missing of the pair', () => {
    expect(() => tls(join(dir, 'absent.pem'), key)).toThrow(
      /^INGEST_TLS_CERT_FILE: cannot read .* \(ENOENT\)/,
    );
    expect(() => tls(cert, undefined)).toThrow(/^INGEST_TLS_KEY_FILE: expected a PEM file path/);
  });
});
