// How hookledger's own broker connection (DescribeConfigs) speaks TLS and SASL, read from the same
// librdkafka properties every other client gets, so the two can never disagree about a cluster.
import { readFileSync } from 'node:fs';
import type { OAuthClientCredentials } from './oauth-token.js';
import { SCRAM_MECHANISMS } from './scram.js';

export interface BrokerTls {
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  /** PKCS#12 keystore (librdkafka's ssl.keystore.location). */
  pfx?: Buffer;
  passphrase?: string;
  /** enable.ssl.certificate.verification */
  verifyCertificate: boolean;
  /** ssl.endpoint.identification.algorithm=https (librdkafka's default): the name must match. */
  verifyHostname: boolean;
}

export type BrokerSasl =
  | { mechanism: 'PLAIN' | 'SCRAM-SHA-256' | 'SCRAM-SHA-512'; username: string; password: string }
  /** librdkafka's sasl.oauthbearer.method=oidc: a token from the endpoint by the client credentials grant. */
  | { mechanism: 'OAUTHBEARER'; oauth: OAuthClientCredentials };

export interface BrokerSecurity {
  tls?: BrokerTls;
  sasl?: BrokerSasl;
}

/** What the clients' properties ask for, this client cannot speak (OAUTHBEARER, GSSAPI, an unknown protocol). */
export class UnsupportedSecurityError extends Error {
  override name = 'UnsupportedSecurityError';
}

type Properties = Readonly<Record<string, string | number | boolean>>;

/** The properties' TLS and SASL settings, files read; throws UnsupportedSecurityError for what is not spoken. */
export function brokerSecurity(
  properties: Properties = {},
  read: (path: string) => Buffer = (path) => readFileSync(path),
): BrokerSecurity {
  const get = (name: string) => (properties[name] === undefined ? undefined : String(properties[name]));
  const protocol = (get('security.protocol') ?? 'plaintext').toLowerCase();
  if (!['plaintext', 'ssl', 'sasl_plaintext', 'sasl_ssl'].includes(protocol))
    throw new UnsupportedSecurityError(`security.protocol ${protocol}: not a protocol Kafka speaks`);
  const security: BrokerSecurity = {};

  if (protocol === 'ssl' || protocol === 'sasl_ssl') {
    const tls: BrokerTls = {
      verifyCertificate: get('enable.ssl.certificate.verification') !== 'false',
      verifyHostname: (get('ssl.endpoint.identification.algorithm') ?? 'https').toLowerCase() === 'https',
    };
    const file = (name: string) => {
      const path = get(name);
      return path === undefined ? undefined : read(path);
    };
    const pem = (name: string) => {
      const text = get(name);
      return text === undefined ? undefined : Buffer.from(text);
    };
    const ca =
      pem('ssl.ca.pem') ?? (get('ssl.ca.location') === 'probe' ? undefined : file('ssl.ca.location'));
    const cert = pem('ssl.certificate.pem') ?? file('ssl.certificate.location');
    const key = pem('ssl.key.pem') ?? file('ssl.key.location');
    const pfx = file('ssl.keystore.location');
    const passphrase = get('ssl.key.password') ?? get('ssl.keystore.password');
    if (ca) tls.ca = ca;
    if (cert) tls.cert = cert;
    if (key) tls.key = key;
    if (pfx) tls.pfx = pfx;
    if (passphrase !== undefined) tls.passphrase = passphrase;
    security.tls = tls;
  }

  if (protocol === 'sasl_plaintext' || protocol === 'sasl_ssl') {
    const mechanism = (get('sasl.mechanism') ?? get('sasl.mechanisms') ?? 'GSSAPI').toUpperCase();
    if (mechanism === 'OAUTHBEARER') {
      security.sasl = { mechanism, oauth: oidcClient(get) };
      return security;
    }
    if (mechanism !== 'PLAIN' && SCRAM_MECHANISMS[mechanism] === undefined)
      throw new UnsupportedSecurityError(
        `SASL ${mechanism}: hookledger reads topic configs with its own DescribeConfigs client (librdkafka's Node binding has none), which logs in with PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER (OIDC) only: give hookledger such a user`,
      );
    security.sasl = {
      mechanism: mechanism as 'PLAIN' | 'SCRAM-SHA-256' | 'SCRAM-SHA-512',
      username: get('sasl.username') ?? '',
      password: get('sasl.password') ?? '',
    };
  }
  return security;
}

/** OAUTHBEARER the way librdkafka does it here: its OIDC login (a token endpoint and a client). */
function oidcClient(get: (name: string) => string | undefined): OAuthClientCredentials {
  const tokenUrl = get('sasl.oauthbearer.token.endpoint.url');
  const clientId = get('sasl.oauthbearer.client.id');
  const clientSecret = get('sasl.oauthbearer.client.secret');
  if (
    (get('sasl.oauthbearer.method') ?? 'default').toLowerCase() !== 'oidc' ||
    !tokenUrl ||
    !clientId ||
    !clientSecret
  )
    throw new UnsupportedSecurityError(
      "SASL OAUTHBEARER: hookledger reads topic configs with its own DescribeConfigs client (librdkafka's Node binding has none), which logs in through an OIDC token endpoint only (KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL, _CLIENT_ID, _CLIENT_SECRET)",
    );
  const scope = get('sasl.oauthbearer.scope');
  return { tokenUrl, clientId, clientSecret, ...(scope === undefined ? {} : { scope }) };
}
