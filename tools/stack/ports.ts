// Finding free TCP ports and asking whether something answers on one.
import { readFileSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';

/** Where the OS takes the local ports of outgoing connections (Linux's default when it cannot be read). */
function ephemeralRange(): [number, number] {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8')
      .trim()
      .split(/\s+/)
      .map(Number);
    if (Number.isInteger(low) && Number.isInteger(high) && low! > 0 && high! >= low!) return [low!, high!];
  } catch {}
  return [32768, 60999];
}

/** How many random ports below the ephemeral range are tried before the OS is asked for any. */
const TRIES = 50;

/** Ports this process handed out lately, not yet bound perhaps: never handed out twice in a row. */
const handedOut: number[] = [];
const REMEMBERED = 256;

/**
 * A port free right now, for a server (a JVM) that binds it seconds later. Taken below the ephemeral
 * range: a port the OS hands out for `listen(0)` comes from that range, where every outgoing connection
 * on the machine also takes its local port, so in the seconds before the JVM binds it a Kafka client's
 * connection could take it (a broker that then exits "Address already in use" was seen under load).
 */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  const [low] = ephemeralRange();
  const top = Math.min(low - 1, 32_767);
  const bottom = Math.max(10_000, top - 12_000);
  if (top > bottom) {
    for (let i = 0; i < TRIES; i++) {
      const port = bottom + Math.floor(Math.random() * (top - bottom + 1));
      if (handedOut.includes(port)) continue;
      // Reserved before the check, so a concurrent call cannot pick it meanwhile.
      handedOut.push(port);
      if (handedOut.length > REMEMBERED) handedOut.shift();
      if (await portIsFree(port, host)) return port;
    }
  }
  return anyFreePort(host);
}

/** A port the OS reports free right now (bind to port 0). */
function anyFreePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen({ port: 0, host, exclusive: true }, () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => (port > 0 ? resolve(port) : reject(new Error('no port assigned'))));
    });
  });
}

/** Whether `port` can be bound now: used to keep a stack's previous ports when they are still free. */
export function portIsFree(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/** Whether a TCP connection to host:port succeeds within `timeoutMs`. */
export function portAnswers(port: number, host = '127.0.0.1', timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ port, host });
    const done = (answer: boolean) => {
      socket.destroy();
      resolve(answer);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}
