// The client side of SCRAM (RFC 5802; SCRAM-SHA-256 in RFC 7677, SCRAM-SHA-512 alike) with node:crypto:
// what hookledger's own DescribeConfigs connection sends in SaslAuthenticate. Pure but for the nonce.
import { createHash, createHmac, pbkdf2Sync, randomBytes, timingSafeEqual } from 'node:crypto';

export type ScramHash = 'sha1' | 'sha256' | 'sha512';

/** Kafka's SCRAM mechanisms and their hash (SCRAM-SHA-1 only for RFC 5802's own test vector). */
export const SCRAM_MECHANISMS: Readonly<Record<string, ScramHash>> = {
  'SCRAM-SHA-256': 'sha256',
  'SCRAM-SHA-512': 'sha512',
};

const HASH_BYTES: Readonly<Record<ScramHash, number>> = { sha1: 20, sha256: 32, sha512: 64 };

/** The server's answer does not follow RFC 5802, or proves it does not know the password. */
export class ScramError extends Error {
  override name = 'ScramError';
}

/** RFC 5802 §5.1: `=` and `,` in a user name are written `=3D` and `=2C`. */
export function saslName(username: string): string {
  return username.replaceAll('=', '=3D').replaceAll(',', '=2C');
}

export interface ScramClient {
  /** client-first-message: `n,,n=<user>,r=<nonce>`. */
  first(): string;
  /** client-final-message for the server-first-message (the proof), remembering what to expect back. */
  final(serverFirst: string): string;
  /** Checks the server-final-message's signature: the server knew the password too. */
  verify(serverFinal: string): void;
}

/**
 * One SCRAM exchange. Passwords are used as given: RFC 5802 asks for SASLprep, which changes only
 * passwords with unusual Unicode (Kafka's own Java client does not apply it either).
 */
export function scramClient(
  hash: ScramHash,
  username: string,
  password: string,
  nonce: string = randomBytes(18).toString('base64'),
): ScramClient {
  const firstBare = `n=${saslName(username)},r=${nonce}`;
  let expectedServerSignature: Buffer | undefined;
  return {
    first: () => `n,,${firstBare}`,
    final(serverFirst) {
      const fields = attributes(serverFirst);
      const combinedNonce = fields.get('r');
      const salt = fields.get('s');
      const iterations = Number(fields.get('i'));
      if (fields.has('e')) throw new ScramError(`the server refused: ${fields.get('e')}`);
      if (!combinedNonce?.startsWith(nonce) || combinedNonce.length === nonce.length)
        throw new ScramError("the server's nonce does not extend ours");
      if (salt === undefined || !Number.isInteger(iterations) || iterations < 1)
        throw new ScramError(`not a server-first-message: ${JSON.stringify(serverFirst)}`);
      const saltedPassword = pbkdf2Sync(
        password,
        Buffer.from(salt, 'base64'),
        iterations,
        HASH_BYTES[hash],
        hash,
      );
      const clientKey = hmac(hash, saltedPassword, 'Client Key');
      const storedKey = createHash(hash).update(clientKey).digest();
      // `biws` is base64("n,,"): no channel binding, no authorization identity.
      const finalWithoutProof = `c=biws,r=${combinedNonce}`;
      const authMessage = `${firstBare},${serverFirst},${finalWithoutProof}`;
      const clientSignature = hmac(hash, storedKey, authMessage);
      const proof = Buffer.alloc(clientKey.length);
      for (let i = 0; i < proof.length; i++) proof[i] = clientKey[i]! ^ clientSignature[i]!;
      expectedServerSignature = hmac(hash, hmac(hash, saltedPassword, 'Server Key'), authMessage);
      return `${finalWithoutProof},p=${proof.toString('base64')}`;
    },
    verify(serverFinal) {
      const fields = attributes(serverFinal);
      if (fields.has('e')) throw new ScramError(`the server refused: ${fields.get('e')}`);
      const signature = Buffer.from(fields.get('v') ?? '', 'base64');
      if (
        expectedServerSignature === undefined ||
        signature.length !== expectedServerSignature.length ||
        !timingSafeEqual(signature, expectedServerSignature)
      )
        throw new ScramError("the server's signature does not match: it does not know the password");
    },
  };
}

function hmac(hash: ScramHash, key: Buffer, text: string): Buffer {
  return createHmac(hash, key).update(text).digest();
}

/** `a=1,b=2` as a map; a value may itself hold `=` (base64). */
function attributes(message: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const part of message.split(',')) {
    const at = part.indexOf('=');
    if (at === 1) fields.set(part[0]!, part.slice(2));
  }
  return fields;
}
