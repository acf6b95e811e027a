// /healthz (alive), /readyz (state restored, producers ready) and /metrics for stream apps, on node:http.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What /metrics serves: a prom-client Registry, or the series of several threads summed. */
export interface MetricsSource {
  contentType: string;
  metrics(): Promise<string>;
}

export interface OpsServerOptions {
  host: string;
  port: number;
  registry: MetricsSource;
  /**
   * Named readiness checks; /readyz answers 200 only when every one is ready. A check may say why it
   * is not (a partition whose restore keeps failing, and the error): /readyz lists those reasons.
   */
  checks: Record<string, () => boolean | Readiness>;
}

export interface Readiness {
  ready: boolean;
  reasons?: readonly string[];
  /** Bytes its state takes on disk, when it keeps state on disk: /readyz shows it, ready or not. */
  stateDiskBytes?: number;
  /** Records behind per changelog partition it follows as a standby (`topic[partition]`): shown ready or not. */
  standbyLag?: Readonly<Record<string, number>>;
}

export interface OpsServer {
  url: string;
  close(): Promise<void>;
}

export async function startOpsServer({ host, port, registry, checks }: OpsServerOptions): Promise<OpsServer> {
  let closing = false;
  const server: Server = createServer((request, response) => {
    const send = (status: number, body: string, type = 'application/json') => {
      response.writeHead(status, { 'content-type': type });
      response.end(body);
    };
    const path = (request.url ?? '/').split('?')[0];
    if (request.method !== 'GET') return send(405, JSON.stringify({ error: 'method not allowed' }));
    if (path === '/healthz') return send(200, JSON.stringify({ status: 'ok' }));
    if (path === '/readyz') {
      const results: Record<string, boolean> = { accepting: !closing };
      const reasons: Record<string, readonly string[]> = {};
      const stateDiskBytes: Record<string, number> = {};
      const standbyLag: Record<string, Readonly<Record<string, number>>> = {};
      if (closing) reasons.accepting = ['shutting down'];
      for (const [name, check] of Object.entries(checks)) {
        const result = check();
        const readiness = typeof result === 'boolean' ? { ready: result } : result;
        results[name] = readiness.ready;
        if (readiness.stateDiskBytes !== undefined) stateDiskBytes[name] = readiness.stateDiskBytes;
        if (readiness.standbyLag !== undefined) standbyLag[name] = readiness.standbyLag;
        if (!readiness.ready && readiness.reasons !== undefined && readiness.reasons.length > 0)
          reasons[name] = readiness.reasons;
      }
      const ready = Object.values(results).every(Boolean);
      const disk = {
        ...(Object.keys(stateDiskBytes).length > 0 ? { stateDiskBytes } : {}),
        ...(Object.keys(standbyLag).length > 0 ? { standbyLag } : {}),
      };
      return send(
        ready ? 200 : 503,
        JSON.stringify(
          ready ? { ready, checks: results, ...disk } : { ready, checks: results, reasons, ...disk },
        ),
      );
    }
    if (path === '/metrics') {
      registry.metrics().then(
        (text) => send(200, text, registry.contentType),
        (error: unknown) => send(500, JSON.stringify({ error: String(error) })),
      );
      return;
    }
    send(404, JSON.stringify({ error: 'not found' }));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const { address, port: bound } = server.address() as AddressInfo;
  const shown = address.includes(':') ? `[${address}]` : address;
  return {
    url: `http://${shown}:${bound}`,
    close() {
      closing = true;
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
