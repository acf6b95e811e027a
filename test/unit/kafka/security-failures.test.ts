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
