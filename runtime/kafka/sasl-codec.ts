// The bytes of the two requests that log a connection in before DescribeConfigs: SaslHandshake v1 (API key
// 17) and SaslAuthenticate v1 (API key 36). Pure: no sockets.
//
// Versions: SaslHandshake v1 is the one every broker since 1.0 speaks and the oldest Kafka 4.x keeps
// (KIP-896 removed v0, which sent the SASL bytes unframed); SaslAuthenticate v1 adds the session lifetime
// to the answer and is the last version before the flexible (tagged-field) encoding of v2. Layouts from
// apache/kafka clients/src/main/resources/common/message/Sasl{Handshake,Authenticate}{Request,Response}.json:
//
//   request header v1: api_key int16 | api_version int16 | correlation_id int32 | client_id NULLABLE_STRING
//   SaslHandshake v1 request:     mechanism STRING
//   SaslHandshake v1 response:    correlation_id int32 | error_code int16 | mechanisms ARRAY of STRING
//   SaslAuthenticate v1 request:  auth_bytes BYTES (int32 length + bytes)
//   SaslAuthenticate v1 response: correlation_id int32 | error_code int16 | error_message NULLABLE_STRING |
//                                 auth_bytes BYTES | session_lifetime_ms int64

export const SASL_HANDSHAKE = { apiKey: 17, version: 1 } as const;
export const SASL_AUTHENTICATE = { apiKey: 36, version: 1 } as const;

/** The answer does not fit the layout. */
export class SaslDecodeError extends Error {
  override name = 'SaslDecodeError';
}

function int16(value: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeInt16BE(value);
  return b;
}

function int32(value: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeInt32BE(value);
  return b;
}

function string(value: string): Buffer {
  const bytes = Buffer.from(value, 'utf8');
  return Buffer.concat([int16(bytes.length), bytes]);
}

/** A whole request frame (size prefix included) with header v1. */
function frame(
  api: { apiKey: number; version: number },
  correlationId: number,
  clientId: string,
  body: Buffer,
) {
  const payload = Buffer.concat([
    int16(api.apiKey),
    int16(api.version),
    int32(correlationId),
    string(clientId),
    body,
  ]);
  return Buffer.concat([int32(payload.length), payload]);
}

export function encodeSaslHandshakeRequest(
  correlationId: number,
  clientId: string,
  mechanism: string,
): Buffer {
  return frame(SASL_HANDSHAKE, correlationId, clientId, string(mechanism));
}

export function encodeSaslAuthenticateRequest(
  correlationId: number,
  clientId: string,
  authBytes: Buffer,
): Buffer {
  return frame(
    SASL_AUTHENTICATE,
    correlationId,
    clientId,
    Buffer.concat([int32(authBytes.length), authBytes]),
  );
}

/** Reads front to back; every read checks the bytes are there. */
class Cursor {
  #at = 0;
  constructor(private readonly buffer: Buffer) {}

  #take(length: number): number {
    if (this.buffer.length - this.#at < length)
      throw new SaslDecodeError(`response truncated at offset ${this.#at} (${length} bytes needed)`);
    const at = this.#at;
    this.#at += length;
    return at;
  }

  int16 = () => this.buffer.readInt16BE(this.#take(2));
  int32 = () => this.buffer.readInt32BE(this.#take(4));
  int64 = () => this.buffer.readBigInt64BE(this.#take(8));

  nullableString(): string | null {
    const length = this.int16();
    if (length < 0) return null;
    const at = this.#take(length);
    return this.buffer.toString('utf8', at, at + length);
  }

  bytes(): Buffer {
    const length = this.int32();
    if (length < 0) return Buffer.alloc(0);
    const at = this.#take(length);
    return this.buffer.subarray(at, at + length);
  }
}

export interface SaslHandshakeResponse {
  correlationId: number;
  errorCode: number;
  /** What the listener offers (in an UNSUPPORTED_SASL_MECHANISM answer: what to use instead). */
  mechanisms: string[];
}

/** Decodes a response frame's payload (after its int32 size). */
export function decodeSaslHandshakeResponse(payload: Buffer): SaslHandshakeResponse {
  const r = new Cursor(payload);
  const correlationId = r.int32();
  const errorCode = r.int16();
  const count = r.int32();
  if (count > payload.length)
    throw new SaslDecodeError(`${count} mechanisms announced in ${payload.length} bytes`);
  const mechanisms: string[] = [];
  for (let i = 0; i < count; i++) mechanisms.push(r.nullableString() ?? '');
  return { correlationId, errorCode, mechanisms };
}

export interface SaslAuthenticateResponse {
  correlationId: number;
  errorCode: number;
  errorMessage: string | null;
  authBytes: Buffer;
  sessionLifetimeMs: bigint;
}

export function decodeSaslAuthenticateResponse(payload: Buffer): SaslAuthenticateResponse {
  const r = new Cursor(payload);
  return {
    correlationId: r.int32(),
    errorCode: r.int16(),
    errorMessage: r.nullableString(),
    authBytes: r.bytes(),
    sessionLifetimeMs: r.int64(),
  };
}
