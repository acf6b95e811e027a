// A TCP proxy in front of one Kafka broker that can hold back the broker's answers to EndTxn (the
// request that commits or aborts a transaction) for a while: the coordinator has committed, and the
// producer does not hear so before its commit times out. Everything else passes untouched. The broker
// advertises the proxy's address, so every client (and the broker's own inter-broker calls) goes through it.
import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net';

/** Kafka's api key of EndTxn. */
const END_TXN = 26;

export interface AnswerDelay {
  /** The proxy's port: what the broker advertises. */
  readonly port: number;
  /** Where it forwards to: the broker's own port (set before the broker starts answering). */
  forwardTo(port: number): void;
  /**
   * From now until `ms` from now, every EndTxn answer is held back until then (and, since answers come
   * in order on a connection, whatever that connection answers after it). Resolves with how many
   * EndTxn answers it held once the window closed and they were delivered.
   */
  holdEndTxnAnswers(ms: number): Promise<number>;
  /** How many EndTxn answers were held so far. */
  held(): number;
  close(): Promise<void>;
}

/** Splits a stream of size-prefixed Kafka frames; `onFrame` sees each whole frame (size included). */
function frames(onFrame: (frame: Buffer) => void): (chunk: Buffer) => void {
  let buffered: Buffer = Buffer.alloc(0);
  return (chunk) => {
    buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
    while (buffered.length >= 4) {
      const size = buffered.readInt32BE(0);
      if (buffered.length < 4 + size) break;
      onFrame(buffered.subarray(0, 4 + size));
      buffered = buffered.subarray(4 + size);
    }
  };
}

export async function startAnswerDelay(): Promise<AnswerDelay> {
  let upstreamPort: number | undefined;
  let windowEnd = 0;
  let heldCount = 0;
  const sockets = new Set<Socket>();
  /** Releases of connections whose answers are held, run when the window closes. */
  const releases = new Set<() => void>();

  const server: Server = createServer((client) => {
    if (upstreamPort === undefined) {
      client.destroy();
      return;
    }
    const broker = tcpConnect({ host: '127.0.0.1', port: upstreamPort });
    sockets.add(client).add(broker);
    const endTxnIds = new Set<number>();
    /** Answers waiting for the window to close, in order; undefined while none is held. */
    let holding: Buffer[] | undefined;
    const release = () => {
      const waiting = holding;
      holding = undefined;
      releases.delete(release);
      if (waiting && !client.destroyed) for (const frame of waiting) client.write(frame);
    };

    client.on(
      'data',
      frames((frame) => {
        // Request header: api key (int16), api version (int16), correlation id (int32).
        if (frame.length >= 12 && frame.readInt16BE(4) === END_TXN) endTxnIds.add(frame.readInt32BE(8));
        broker.write(frame);
      }),
    );
    broker.on(
      'data',
      frames((frame) => {
        // Response header: correlation id (int32).
        const id = frame.length >= 8 ? frame.readInt32BE(4) : -1;
        const isEndTxn = endTxnIds.delete(id);
        if (holding === undefined && isEndTxn && Date.now() < windowEnd) {
          heldCount++;
          holding = [];
          releases.add(release);
        }
        if (holding) holding.push(Buffer.from(frame));
        else client.write(frame);
      }),
    );
    const close = () => {
      releases.delete(release);
      client.destroy();
      broker.destroy();
      sockets.delete(client);
      sockets.delete(broker);
    };
    client.on('close', close).on('error', close);
    broker.on('close', close).on('error', close);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the proxy has no TCP port');

  return {
    port: address.port,
    forwardTo(port) {
      upstreamPort = port;
    },
    async holdEndTxnAnswers(ms) {
      const before = heldCount;
      windowEnd = Date.now() + ms;
      await new Promise((r) => setTimeout(r, ms));
      windowEnd = 0;
      for (const release of [...releases]) release();
      return heldCount - before;
    },
    held: () => heldCount,
    async close() {
      windowEnd = 0;
      for (const release of [...releases]) release();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
