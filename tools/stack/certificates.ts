// Certificates for the secured local stack, made with openssl at start: a CA of its own, and the broker's
// and the registry's certificates it signs for 127.0.0.1 and localhost. Kept in the state dir, so a
// restart reuses them.
import { execFile } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { StackError } from './errors.js';

const run = promisify(execFile);

export interface CertificateAuthority {
  /** The CA certificate (PEM): what clients trust (KAFKA_SSL_CA_FILE). */
  certFile: string;
  keyFile: string;
}

export interface ServerCertificate {
  certFile: string;
  keyFile: string;
  /** The private key followed by the certificate, in one PEM file (Kafka's PEM keystore). */
  keystorePem: string;
}

async function openssl(args: string[]): Promise<void> {
  try {
    await run('openssl', args, { timeout: 30_000 });
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr?.trim();
    const missing = (error as NodeJS.ErrnoException).code === 'ENOENT';
    throw new StackError(
      missing
        ? 'the secured stack makes its certificates with openssl, which is not on PATH: install it (Debian: apt-get install openssl)'
        : `openssl ${args[0]} failed: ${stderr || (error as Error).message}`,
    );
  }
}

/** Where createCertificateAuthority keeps the CA `name` in `dir`: to sign more with it later. */
export function certificateAuthorityIn(dir: string, name = 'ca'): CertificateAuthority {
  return { certFile: join(dir, `${name}.pem`), keyFile: join(dir, `${name}.key`) };
}

/** A self-signed CA valid for 30 days (a local stack lives for hours). */
export async function createCertificateAuthority(dir: string, name = 'ca'): Promise<CertificateAuthority> {
  await mkdir(dir, { recursive: true });
  const ca = certificateAuthorityIn(dir, name);
  await openssl([
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    ca.keyFile,
    '-out',
    ca.certFile,
    '-days',
    '30',
    '-subj',
    `/CN=hookledger local ${name}`,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  return ca;
}

/** A server certificate for 127.0.0.1 and localhost, signed by `ca`. */
export async function createServerCertificate(
  dir: string,
  ca: CertificateAuthority,
  name = 'broker',
): Promise<ServerCertificate> {
  const keyFile = join(dir, `${name}.key`);
  const csr = join(dir, `${name}.csr`);
  const certFile = join(dir, `${name}.pem`);
  const extensions = join(dir, `${name}.ext`);
  await openssl([
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    keyFile,
    '-out',
    csr,
    '-subj',
    '/CN=127.0.0.1',
  ]);
  // librdkafka checks the host name against the SAN (ssl.endpoint.identification.algorithm=https).
  await writeFile(
    extensions,
    'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n',
  );
  await openssl([
    'x509',
    '-req',
    '-in',
    csr,
    '-CA',
    ca.certFile,
    '-CAkey',
    ca.keyFile,
    '-CAcreateserial',
    '-out',
    certFile,
    '-days',
    '30',
    '-extfile',
    extensions,
  ]);
  const keystorePem = join(dir, `${name}-keystore.pem`);
  await writeFile(keystorePem, `${await readFile(keyFile, 'utf8')}${await readFile(certFile, 'utf8')}`, {
    mode: 0o600,
  });
  return { certFile, keyFile, keystorePem };
}
