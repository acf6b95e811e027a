// Wrong credentials and untrusted certificates, as librdkafka reports them: only in its log lines (its
// error events say no more than "authentication failure" or "ssl error", and a connect attempt just
// times out while it retries). Pure: a log line in, the one line a person needs out.

/** librdkafka's codes for the two kinds (rdkafka.h): RD_KAFKA_RESP_ERR__AUTHENTICATION and __SSL. */
export const AUTHENTICATION_FAILED = -169;
export const TLS_FAILED = -181;

export interface SecurityFailure {
  code: typeof AUTHENTICATION_FAILED | typeof TLS_FAILED;
  /** librdkafka's reason with the broker it names, without its thread tag and timing. */
  reason: string;
  /** Which variables to look at. */
  hint: string;
}

const AUTHENTICATION = /SASL authentication error|SASL \S+ mechanism handshake failed|SASL handshake failed/i;
const MECHANISM = /mechanism handshake failed|Unsupported SASL mechanism/i;
/**
 * A login cut short by the connection (`SASL authentication error: Local: Broker transport failure`, a
 * broker restarting or overloaded mid-login): librdkafka's own errors start with "Local:", the broker's
 * verdicts never do. Retried like any connection failure, never reported as wrong credentials.
 */
const INTERRUPTED = /SASL (authentication|handshake) (error|failed): Local:/i;
/** librdkafka appends advice about system CA packages, which is not where a private CA goes. */
const VERIFY_ADVICE = /:\s*broker certificate could not be verified.*$/i;
const TLS = /SSL handshake failed|certificate verify failed/i;
/** librdkafka's OIDC login (sasl.oauthbearer.method=oidc) could not get a token from the endpoint. */
const OIDC_TOKEN = /Failed to retrieve OIDC token from/i;
/** The endpoint answered and refused the client; anything else means it did not answer. */
const OIDC_REFUSED = /\((400|401|403)\)\s*$/;

/**
 * The failure a librdkafka log line reports, if it is one that retrying will not fix. `mechanism` (the
 * client's sasl.mechanism) says which variables a refused login points at.
 */
export function securityFailureIn(message: string, mechanism?: string): SecurityFailure | undefined {
  if (OIDC_TOKEN.test(message))
    return {
      code: AUTHENTICATION_FAILED,
      reason: message.replace(/^\[thrd:[^\]]*\]:\s*/, '').trim(),
      hint: OIDC_REFUSED.test(message)
        ? 'check KAFKA_SASL_OAUTHBEARER_CLIENT_ID and KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET (or its _FILE)'
        : 'check KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL: the token endpoint does not answer',
    };
  const tls = TLS.test(message);
  if (!tls && (!AUTHENTICATION.test(message) || INTERRUPTED.test(message))) return undefined;
  const reason = message
    .replace(/^\[thrd:[^\]]*\]:\s*/, '')
    .replace(/\s*\(after \d+ms in state [^)]*\)\s*$/, '')
    .replace(VERIFY_ADVICE, '')
    .trim();
  return tls
    ? {
        code: TLS_FAILED,
        reason,
        hint: /verify/i.test(message)
          ? "the broker's certificate is not signed by a CA in KAFKA_SSL_CA_FILE (or the system's)"
          : 'check KAFKA_SECURITY_PROTOCOL (does this listener speak TLS?) and KAFKA_SSL_*',
      }
    : {
        code: AUTHENTICATION_FAILED,
        reason,
        hint: MECHANISM.test(message)
          ? 'check KAFKA_SASL_MECHANISM'
          : mechanism?.toUpperCase() === 'OAUTHBEARER'
            ? "the broker refused the token: does it trust KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL's issuer and signing key (and the token's audience and KAFKA_SASL_OAUTHBEARER_SCOPE)?"
            : 'check KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD (or their _FILE) and KAFKA_SASL_MECHANISM',
      };
}

/** `<reason> (<hint>)`: one line. */
export function describeSecurityFailure({ reason, hint }: SecurityFailure): string {
  return `${reason} (${hint})`;
}
