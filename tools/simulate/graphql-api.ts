// The platform's GraphQL API as the simulator plays it: `POST /v1/graphql` answers the query for the
// switches the simulator sent (always with the full record: what the Full query selects), an
// OperationFailure for any other id, and on request 429s, 500s and answers that never come, so the
// enrich stage can be shown (and tested) against weather. Loopback only.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Json, writeJson } from './body.js';
import { createRandom } from './prng.js';

/** Where `start` expects it, so the enrich stage it runs may fetch from it (its allow-list). */
export const DEFAULT_API_PORT = 8089;

/**
 * Where it answers: the deliveries name it in `query.api`, and the contract's query address has a `v1`
 * segment before `graphql` (§9).
 */
const PATH = '/v1/graphql';

/** How long a "timeout" answer is held back: longer than any client waits. */
const HELD_MS = 60_000;

export interface GraphqlApiOptions {
  host?: string;
  /** 0: any free port. */
  port: number;
  /** Share of requests answered 429 (Retry-After: 1), 500 or not at all, a third each. */
  failureRate: number;
  seed: string;
}

export interface GraphqlApi {
  /** `http://host:port/v1/graphql`: what deliveries name in `query.api`. */
  readonly url: string;
  /** Records the switch's current full record (the generator's onSwitch), and a thin delivery of it. */
  record(id: string, fullRecord: Json, thin?: boolean): void;
  readonly stats: { requests: number; answered: number; failed: number };
  /** Thin deliveries sent whose switch has not been answered since (what the receiver has yet to fetch). */
  unfetched(): number;
  /** When the last request came, ms. */
  lastRequestAt(): number;
  close(): Promise<void>;
}

export async function serveGraphqlApi({
  host = '127.0.0.1',
  port,
  failureRate,
  seed,
}: GraphqlApiOptions): Promise<GraphqlApi> {
  const records = new Map<string, string>();
  /** Per switch, its thin deliveries not answered yet: each answer for it settles one. */
  const awaiting = new Map<string, number>();
  let unfetched = 0;
  const random = createRandom(seed).fork('graphql-api');
  const stats = { requests: 0, answered: 0, failed: 0 };
  let lastAt = Date.now();
  const held = new Set<ServerResponse>();

  const send = (res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(body);
  };

  async function answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    stats.requests++;
    lastAt = Date.now();
    if (req.method !== 'POST' || new URL(req.url ?? '/', 'http://x').pathname !== PATH)
      return send(res, 404, `{"errors":[{"message":"POST ${PATH}"}]}`);
    let text = '';
    for await (const chunk of req) text += chunk;
    let id: unknown;
    try {
      id = (JSON.parse(text) as { variables?: { id?: unknown } }).variables?.id;
    } catch {
      return send(res, 400, '{"errors":[{"message":"the body is not JSON"}]}');
    }
    if (failureRate > 0 && random.chance(failureRate)) {
      stats.failed++;
      const kind = random.int(0, 2);
      if (kind === 0)
        return send(res, 429, '{"errors":[{"message":"too many requests"}]}', { 'retry-after': '1' });
      if (kind === 1) return send(res, 500, '{"errors":[{"message":"internal error"}]}');
      // No answer: the client's timeout decides.
      held.add(res);
      setTimeout(() => held.delete(res) && send(res, 504, '{}'), HELD_MS).unref();
      return;
    }
    stats.answered++;
    const record = typeof id === 'string' ? records.get(id) : undefined;
    const waiting = typeof id === 'string' ? (awaiting.get(id) ?? 0) : 0;
    if (waiting > 0) {
      awaiting.set(id as string, waiting - 1);
      unfetched--;
    }
    const root =
      record ?? writeJson({ __typename: 'OperationFailure', description: 'Energy switch not found' });
    send(res, 200, `{"data":{"getEnergySwitch":${root}}}`);
  }

  const server: Server = createServer((req, res) => {
    answer(req, res).catch(() => send(res, 500, '{}'));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  return {
    url: `http://${host}:${address.port}${PATH}`,
    record(id, fullRecord, thin = false) {
      records.set(id, writeJson(fullRecord));
      if (!thin) return;
      awaiting.set(id, (awaiting.get(id) ?? 0) + 1);
      unfetched++;
    },
    stats,
    unfetched: () => unfetched,
    lastRequestAt: () => lastAt,
    async close() {
      for (const res of held) res.destroy();
      held.clear();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
