// One connection to one broker for hookledger's own requests (DescribeConfigs): TCP or TLS (node:tls),
// then, on a SASL listener, SaslHandshake + SaslAuthenticate (PLAIN, SCRAM per RFC 5802, or OAUTHBEARER
// per RFC 7628 with a token from the OIDC endpoint), then request/response frames in turn.
import { isIP, type Socket, connect as tcpConnect } from 'node:net';
import { type ConnectionOptions, connect as tlsConnect } from 'node:tls';
import type { BrokerSasl, BrokerSecurity } from './broker-security.js';
import { fetchAccessToken, oauthBearerInitialResponse, TokenRefusedError } from './oauth-token.js';
import {
  decodeSaslAuthenticateResponse,
  decodeSaslHandshakeResponse,
  encodeSaslAuthenticateRequest,
  encodeSaslHandshakeRequest,
} from './sasl-codec.js';
import { SCRAM_MECHANISMS, ScramError, scramClient } from './scram.js';

/** A response over this is not an answer to hookledger's few requests: the peer is not a Kafka broker. */
const MAX_RESPONSE_BYTES = 64 * 1024 * 1024;

const CERTIFICATE_PROBLEM = /CERT|VERIFY|SELF_SIGNED|ALTNAME/;

/** The broker refused the credentials, or its certificate is not trusted: no other broker will differ. */
export class BrokerAuthenticationError extends Error {
  override name = 'BrokerAuthenticationError';
}

/** The peer's answer is not a Kafka response frame. */
export class BrokerFrameError extends Error {
  override name = 'BrokerFrameError';
}

export interface BrokerConnection {
  /** Writes one request frame; resolves with the payload of the next response frame. */
  exchange(frame: Buffer): Promise<Buffer>;
  close(): void;
}

export interface OpenOptions {
  host: string;
  port: number;
  clientId: string;
  security: BrokerSecurity;
  /** For connecting, logging in, and each exchange. */
  timeoutMs: number;
}

/** Connects (TLS if asked), logs in (SASL if asked), and returns the connection ready for requests. */
export async function openBrokerConnection(options: OpenOptions): Promise<BrokerConnection> {
  const socket = await openSocket(options);
  const connection = frames(socket, options.timeoutMs);
  try {
    if (options.security.sasl)
      await login(connection, options.security.sasl, options.clientId, options.timeoutMs);
    return connection;
  } catch (error) {
    connection.close();
    throw error;
  }
}

function openSocket({ host, port, security, timeoutMs }: OpenOptions): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const tls = security.tls;
    let socket: Socket;
    if (tls) {
      const options: ConnectionOptions = {
        host,
        port,
        // SNI takes host names only.
        ...(isIP(host) === 0 ? { servername: host } : {}),
        rejectUnauthorized: tls.verifyCertificate,
        ...(tls.verifyHostname ? {} : { checkServerIdentity: () => undefined }),
        ...(tls.ca ? { ca: tls.ca } : {}),
        ...(tls.cert ? { cert: tls.cert } : {}),
        ...(tls.key ? { key: tls.key } : {}),
        ...(tls.pfx ? { pfx: tls.pfx } : {}),
        ...(tls.passphrase !== undefined ? { passphrase: tls.passphrase } : {}),
      };
      socket = tlsConnect(options);
    } else {
      socket = tcpConnect({ host, port });
    }
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no connection within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.once(tls ? 'secureConnect' : 'connect', () => {
      clearTimeout(timer);
      socket.off('error', failed);
      resolve(socket);
    });
    const failed = (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      socket.destroy();
      // Certificate problems carry an OpenSSL-style code (SELF_SIGNED_CERT_IN_CHAIN, ERR_TLS_CERT_ALTNAME_INVALID, …).
      if (tls && CERTIFICATE_PROBLEM.test(error.code ?? ''))
        reject(
          new BrokerAuthenticationError(
            `TLS: ${error.message} (the broker's certificate is not trusted for ${host}: check KAFKA_SSL_CA_FILE)`,
            { cause: error },
          ),
        );
      else reject(error);
    };
    socket.once('error', failed);
  });
}

/** Request/response frames over a socket, one at a time. */
function frames(socket: Socket, timeoutMs: number): BrokerConnection {
  let received = Buffer.alloc(0);
  let waiting: { resolve(payload: Buffer): void; reject(error: Error): void } | undefined;
  let failure: Error | undefined;
  const settle = () => {
    if (!waiting) return;
    if (failure) {
      const { reject } = waiting;
      waiting = undefined;
      reject(failure);
      return;
    }
    if (received.length < 4) return;
    const size = received.readInt32BE(0);
    if (size < 0 || size > MAX_RESPONSE_BYTES) {
      failure = new BrokerFrameError(`response size ${size}: not a Kafka response`);
      settle();
      return;
    }
    if (received.length < 4 + size) return;
    const payload = received.subarray(4, 4 + size);
    received = received.subarray(4 + size);
    const { resolve } = waiting;
    waiting = undefined;
    resolve(payload);
  };
  socket.on('data', (chunk: Buffer) => {
    received = Buffer.concat([received, chunk]);
    settle();
  });
  socket.on('error', (error) => {
    failure ??= error;
    settle();
  });
  // A broker closes the connection on a request it cannot parse (a version it no longer speaks, or
  // PLAINTEXT bytes on a TLS or SASL listener).
  socket.on('close', () => {
    failure ??= new Error(
      'the connection closed before the answer (does the listener speak the configured security.protocol?)',
    );
    settle();
  });
  return {
    exchange(frame) {
      return new Promise<Buffer>((resolve, reject) => {
        const timer = setTimeout(() => {
          waiting = undefined;
          socket.destroy();
          reject(new Error(`no answer within ${timeoutMs} ms`));
        }, timeoutMs);
        waiting = {
          resolve: (payload) => {
            clearTimeout(timer);
            resolve(payload);
          },
          reject: (error) => {
            clearTimeout(timer);
            reject(error);
          },
        };
        socket.write(frame);
        settle();
      });
    },
    close: () => socket.destroy(),
  };
}

/** Kafka's error codes a login can end with. */
const UNSUPPORTED_SASL_MECHANISM = 33;

let nextCorrelationId = 1;

async function login(
  connection: BrokerConnection,
  sasl: BrokerSasl,
  clientId: string,
  timeoutMs: number,
): Promise<void> {
  const who =
    sasl.mechanism === 'OAUTHBEARER'
      ? `SASL OAUTHBEARER as client "${sasl.oauth.clientId}"`
      : `SASL ${sasl.mechanism} as "${sasl.username}"`;
  // The token first: a refused client is the endpoint's answer, not the broker's.
  let token: string | undefined;
  if (sasl.mechanism === 'OAUTHBEARER') {
    try {
      token = await fetchAccessToken(sasl.oauth, timeoutMs);
    } catch (error) {
      if (error instanceof TokenRefusedError) throw new BrokerAuthenticationError(`${who}: ${error.message}`);
      throw error;
    }
  }
  const handshake = decodeSaslHandshakeResponse(
    await connection.exchange(encodeSaslHandshakeRequest(nextCorrelationId++, clientId, sasl.mechanism)),
  );
  if (handshake.errorCode === UNSUPPORTED_SASL_MECHANISM)
    throw new BrokerAuthenticationError(
      `${who}: the listener does not offer ${sasl.mechanism} (it offers ${handshake.mechanisms.join(', ') || 'none'}): check KAFKA_SASL_MECHANISM`,
    );
  if (handshake.errorCode !== 0)
    throw new BrokerAuthenticationError(`${who}: SaslHandshake answered error code ${handshake.errorCode}`);

  const authenticate = async (bytes: string): Promise<string> => {
    const answer = decodeSaslAuthenticateResponse(
      await connection.exchange(
        encodeSaslAuthenticateRequest(nextCorrelationId++, clientId, Buffer.from(bytes, 'utf8')),
      ),
    );
    if (answer.errorCode !== 0)
      throw new BrokerAuthenticationError(
        `${who}: ${answer.errorMessage ?? `error code ${answer.errorCode}`} (${
          sasl.mechanism === 'OAUTHBEARER'
            ? "the broker does not accept the token endpoint's tokens: check KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL"
            : 'check KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD'
        })`,
      );
    return answer.authBytes.toString('utf8');
  };

  if (sasl.mechanism === 'OAUTHBEARER') {
    // RFC 7628 §3.2.2: a refused token comes back as a JSON error challenge with no error code yet; the
    // client answers a lone ^A and the broker then fails the login with its reason.
    const challenge = await authenticate(oauthBearerInitialResponse(token!));
    if (challenge === '') return;
    // Concluding is a formality (the broker answers with a generic failure): the challenge says why.
    await authenticate('\u0001').catch(() => {});
    throw new BrokerAuthenticationError(
      `${who}: the broker refused the token (${challenge}): does it trust KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL's issuer and signing key?`,
    );
  }

  if (sasl.mechanism === 'PLAIN') {
    // RFC 4616: authzid NUL authcid NUL password.
    await authenticate(`\u0000${sasl.username}\u0000${sasl.password}`);
    return;
  }
  const scram = scramClient(SCRAM_MECHANISMS[sasl.mechanism]!, sasl.username, sasl.password);
  try {
    const serverFirst = await authenticate(scram.first());
    const serverFinal = await authenticate(scram.final(serverFirst));
    scram.verify(serverFinal);
  } catch (error) {
    if (error instanceof ScramError) throw new BrokerAuthenticationError(`${who}: ${error.message}`);
    throw error;
  }
}
