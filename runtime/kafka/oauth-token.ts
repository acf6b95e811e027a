// An OAuth 2.0 access token by the client credentials grant (RFC 6749 §4.4), as librdkafka's OIDC login
// (sasl.oauthbearer.method=oidc) asks for it: for hookledger's own broker connection (DescribeConfigs),
// which logs in with the same token endpoint and client as every librdkafka client.

/** The token endpoint answered, and refused: retrying will not help (a wrong client id or secret). */
export class TokenRefusedError extends Error {
  override name = 'TokenRefusedError';
}

export interface OAuthClientCredentials {
  tokenUrl: string;
  clientId: string;
  clientSecret: string;
  scope?: string;
}

/** The access token the endpoint issues; one line naming the endpoint and what to check when it will not. */
export async function fetchAccessToken(client: OAuthClientCredentials, timeoutMs: number): Promise<string> {
  const { tokenUrl, clientId, clientSecret, scope } = client;
  const form = new URLSearchParams({ grant_type: 'client_credentials' });
  if (scope !== undefined) form.set('scope', scope);
  // RFC 6749 §2.3.1: id and secret form-urlencoded, then joined for HTTP Basic (librdkafka does the same).
  const basic = Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret)}`).toString(
    'base64',
  );
  let response: Response;
  try {
    response = await fetch(tokenUrl, {
      method: 'POST',
      headers: {
        authorization: `Basic ${basic}`,
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'application/json',
      },
      body: form.toString(),
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (error) {
    const cause = (error as Error & { cause?: { code?: string } }).cause?.code ?? (error as Error).message;
    throw new Error(`OAUTHBEARER: the token endpoint ${tokenUrl} did not answer (${cause})`, {
      cause: error,
    });
  }
  const text = await response.text();
  let body: { access_token?: unknown; error?: unknown; error_description?: unknown } = {};
  try {
    body = JSON.parse(text) as typeof body;
  } catch {}
  if (!response.ok || typeof body.access_token !== 'string') {
    const reason = [body.error, body.error_description].filter((part) => typeof part === 'string').join(': ');
    throw new TokenRefusedError(
      `the token endpoint ${tokenUrl} answered ${response.status}${reason ? ` (${reason})` : ''} without a token (check KAFKA_SASL_OAUTHBEARER_CLIENT_ID and KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET)`,
    );
  }
  return body.access_token;
}

/** RFC 7628 §3.1: the client's first (and only) message, `n,,` GS2 header and the bearer token. */
export function oauthBearerInitialResponse(token: string): string {
  return `n,,\u0001auth=Bearer ${token}\u0001\u0001`;
}
