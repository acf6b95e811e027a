import { describe, expect, it } from 'vitest';
import {
  AUTHENTICATION_FAILED,
  describeSecurityFailure,
  securityFailureIn,
  TLS_FAILED,
} from '../../../runtime/kafka/security-failures.js';

// Log lines as librdkafka 2.15 writes them (taken from the secured local stack).
const WRONG_PASSWORD =
  '[thrd:sasl_ssl://127.0.0.1:44137/bootstrap]: sasl_ssl://127.0.0.1:44137/bootstrap: SASL authentication error: Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512 (after 386ms in state AUTH_REQ)';
const UNKNOWN_CA =
  '[thrd:sasl_ssl://127.0.0.1:44137/bootstrap]: sasl_ssl://127.0.0.1:44137/bootstrap: SSL handshake failed: error:0A000086:SSL routines::certificate verify failed: broker certificate could not be verified, verify that ssl.ca.location is correctly configured or root CA certificates are installed (install ca-certificates package) (after 96ms in state SSL_HANDSHAKE)';
const WRONG_MECHANISM =
  "[thrd:sasl_ssl://127.0.0.1:44137/bootstrap]: sasl_ssl://127.0.0.1:44137/bootstrap: SASL PLAIN mechanism handshake failed: Broker: Unsupported SASL mechanism: broker's supported mechanisms: SCRAM-SHA-512 (after 304ms in state AUTH_HANDSHAKE)";
const OIDC_REFUSED =
  '[thrd:background]: Failed to retrieve OIDC token from "http://127.0.0.1:37611/token": {"error":"invalid_client","error_description":"unknown client or wrong secret"} (401)';
const OIDC_UNREACHABLE =
  '[thrd:background]: Failed to retrieve OIDC token from "http://127.0.0.1:1/token": Failed to connect to 127.0.0.1 port 1 after 0 ms: Couldn\'t connect to server (-1)';
const TOKEN_REFUSED =
  '[thrd:sasl_ssl://127.0.0.1:37323/bootstrap]: sasl_ssl://127.0.0.1:37323/bootstrap: SASL authentication error: {"status":"invalid_token"} (after 367ms in state AUTH_REQ)';

describe('a login the connection cut short', () => {
  it('is not a security failure: it is retried like any connection failure', () => {
    const interrupted =
      '[thrd:GroupCoordinator]: GroupCoordinator/1: SASL authentication error: Local: Broker transport failure (after 10023ms in state AUTH_REQ)';
    expect(securityFailureIn(interrupted, 'SCRAM-SHA-512')).toBeUndefined();
    expect(securityFailureIn(interrupted, 'OAUTHBEARER')).toBeUndefined();
  });
});

describe("librdkafka's log lines about OAUTHBEARER's OIDC login", () => {
  it('turn a client the token endpoint refuses into one line naming the client variables', () => {
    const failure = securityFailureIn(OIDC_REFUSED, 'OAUTHBEARER')!;
    expect(failure.code).toBe(AUTHENTICATION_FAILED);
    expect(describeSecurityFailure(failure)).toBe(
      'Failed to retrieve OIDC token from "http://127.0.0.1:37611/token": {"error":"invalid_client","error_description":"unknown client or wrong secret"} (401) (check KAFKA_SASL_OAUTHBEARER_CLIENT_ID and KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET (or its _FILE))',
    );
  });

  it('turn a token endpoint that does not answer into one line naming its variable', () => {
    expect(securityFailureIn(OIDC_UNREACHABLE, 'OAUTHBEARER')?.hint).toBe(
      'check KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL: the token endpoint does not answer',
    );
  });

  it('say a refused token is about the issuer the broker trusts, not a password', () => {
    const failure = securityFailureIn(TOKEN_REFUSED, 'OAUTHBEARER')!;
    expect(failure.reason).toBe(
      'sasl_ssl://127.0.0.1:37323/bootstrap: SASL authentication error: {"status":"invalid_token"}',
    );
    expect(failure.hint).toMatch(
      /^the broker refused the token: .*KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL/,
    );
    expect(securityFailureIn(TOKEN_REFUSED, 'SCRAM-SHA-512')?.hint).toMatch(/KAFKA_SASL_PASSWORD/);
  });
});

describe("librdkafka's log lines about credentials and certificates", () => {
  it('turn a wrong password into one line naming the broker and the variables to check', () => {
    const failure = securityFailureIn(WRONG_PASSWORD)!;
    expect(failure.code).toBe(AUTHENTICATION_FAILED);
    expect(describeSecurityFailure(failure)).toBe(
      'sasl_ssl://127.0.0.1:44137/bootstrap: SASL authentication error: Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512 (check KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD (or their _FILE) and KAFKA_SASL_MECHANISM)',
    );
  });

  it('turn an untrusted certificate into one line pointing at KAFKA_SSL_CA_FILE', () => {
    const failure = securityFailureIn(UNKNOWN_CA)!;
    expect(failure.code).toBe(TLS_FAILED);
    expect(describeSecurityFailure(failure)).toBe(
      "sasl_ssl://127.0.0.1:44137/bootstrap: SSL handshake failed: error:0A000086:SSL routines::certificate verify failed (the broker's certificate is not signed by a CA in KAFKA_SSL_CA_FILE (or the system's))",
    );
  });

  it('point a mechanism the listener does not offer at KAFKA_SASL_MECHANISM', () => {
    expect(securityFailureIn(WRONG_MECHANISM)?.hint).toBe('check KAFKA_SASL_MECHANISM');
  });

  it('leave every other line alone (a broker that is down is retried, not fatal)', () => {
    expect(
      securityFailureIn(
        '[thrd:x]: 127.0.0.1:1/bootstrap: Connect to ipv4#127.0.0.1:1 failed: Connection refused',
      ),
    ).toBeUndefined();
  });
});
