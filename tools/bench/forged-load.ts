// Forged traffic against a running ingest, as anyone on the internet can send it: requests to a known
// source with a wrong signature, a huge `webhook.id` and (optionally) many headers. Used by
// `npm run bench:forged` (memory before and after) and test/integration/ingest-hostile.test.ts.
import { request } from 'node:http';

export interface ForgedLoad {
  /** http://host:port/webhooks/<source> */
  url: string;
  requests: number;
  concurrency: number;
  /** Characters of the forged `webhook.id` (1 MB by default: just under the default body limit). */
  idChars?: number;
  /** Extra `x-…` headers per request, each `headerChars` long (header-heavy traffic). */
  headers?: number;
  headerChars?: number;
  /** The X-Signature sent: a well-formed one that matches nothing by default. */
  signature?: string;
}

/** A body whose `webhook.id` is `idChars` long; the number makes each distinct. */
export function forgedBody(idChars: number, n: number): Buffer {
  const id = `${n}-`.padEnd(idChars, 'x');
  return Buffer.from(
    `{"webhook":{"id":"${id}","trigger":"UserAdded","date":"2026-11-20T10:00:00Z"},"data":{}}`,
  );
}

function forgedHeaders(load: ForgedLoad, n: number): Record<string, string> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'x-signature': load.signature ?? `sha1=${n.toString(16).padStart(40, '0')}`,
  };
  for (let i = 0; i < (load.headers ?? 0); i++)
    headers[`x-forged-${i}`] = 'h'.repeat(load.headerChars ?? 100);
  return headers;
}

function send(url: URL, body: Buffer, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: 'POST', headers: { ...headers, 'content-length': String(body.length) } },
      (res) => {
        res.resume();
        res.once('end', () => resolve(res.statusCode ?? 0));
      },
    );
    // A server that cuts a request (a timeout, a limit) answers it as status 0 here.
    req.once('error', (error) => (error.message ? resolve(0) : reject(error)));
    req.end(body);
  });
}

/** Sends the load, `concurrency` at a time; resolves to the count of each status (0: connection cut). */
export async function sendForged(load: ForgedLoad): Promise<Map<number, number>> {
  const url = new URL(load.url);
  const statuses = new Map<number, number>();
  let next = 0;
  const worker = async () => {
    while (next < load.requests) {
      const n = next++;
      const status = await send(url, forgedBody(load.idChars ?? 1_000_000, n), forgedHeaders(load, n));
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
    }
  };
  await Promise.all(Array.from({ length: load.concurrency }, worker));
  return statuses;
}

/** The sum of a series' samples on a /metrics page (0 when absent). */
export function seriesSum(metrics: string, name: string, labels = ''): number {
  let sum = 0;
  for (const line of metrics.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (labels && !line.includes(labels)) continue;
    sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}
