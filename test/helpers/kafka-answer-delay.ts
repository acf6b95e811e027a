// A TCP proxy in front of one Kafka broker that can stall one commit's answer: the broker's answer to an
// EndTxn (the request that commits a transaction) is held back for a while, and so are the answers to
// any resend of that same commit. The coordinator has committed; the producer does not hear so before
// its commit times out. Everything else passes untouched, a new producer's commits included. The broker
// advertises the proxy's address, so every client (and the broker's own inter-broker calls) goes through it.
import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net';

/** Kafka's api key of EndTxn. */
const END_TXN = 26;
/** EndTxn's first version with a flexible (tagged fields, compact strings) request header and body. */
const END_TXN_FLEXIBLE = 3;

export interface AnswerDelay {
  /** The proxy's port: what the broker advertises. */
  readonly port: number;
  /** Where it forwards to: the broker's own port (set before the broker starts answering). */
  forwardTo(port: number): void;
  /**
   * The next commit (EndTxn) sent through the proxy stalls for `ms`: its answer, and the answer to any
   * resend of it (same producer id and epoch), reach the producer only then (and, since answers come in
   * order on a connection, whatever that connection answers after it). The stall ends sooner if another
   * epoch commits (the producer gave up on it and a new one took over). Resolves once the stall is over
   * and the answers are delivered, with how many EndTxn answers were held; 0 if no commit came within
   * `waitMs`.
   */
  stallNextCommit(ms: number, waitMs?: number): Promise<number>;
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

/** An unsigned varint at `offset`: its value and its length in bytes. */
function uvarint(buffer: Buffer, offset: number): [number, number] {
  let value = 0;
  for (let i = 0; ; i++) {
    const byte = buffer[offset + i]!;
    value |= (byte & 0x7f) << (7 * i);
    if ((byte & 0x80) === 0) return [value, i + 1];
  }
}

/** The commit an EndTxn request names: its producer id and epoch (resends of it carry the same). */
function endTxnCommit(frame: Buffer): string {
  const version = frame.readInt16BE(6);
  // Size (4), api key (2), version (2), correlation id (4), then the client id (int16-length string).
  let offset = 12;
  offset += 2 + Math.max(0, frame.readInt16BE(offset));
  if (version >= END_TXN_FLEXIBLE) {
    const [tags, tagsLength] = uvarint(frame, offset);
    offset += tagsLength;
    for (let i = 0; i < tags; i++) {
      const [, tagLength] = uvarint(frame, offset);
      offset += tagLength;
      const [size, sizeLength] = uvarint(frame, offset);
      offset += sizeLength + size;
    }
    // transactional_id as a compact string: length + 1, then the bytes.
    const [lengthPlusOne, length] = uvarint(frame, offset);
    offset += length + lengthPlusOne - 1;
  } else {
    offset += 2 + frame.readInt16BE(offset);
  }
  return `${frame.readBigInt64BE(offset)}:${frame.readInt16BE(offset + 8)}`;
}

export async function startAnswerDelay(): Promise<AnswerDelay> {
  let upstreamPort: number | undefined;
  /** The next EndTxn seen starts a stall of this many ms. */
  let armedMs: number | undefined;
  let stall: { commit: string; end: number } | undefined;
  let heldCount = 0;
  const sockets = new Set<Socket>();
  /** Releases of connections whose answers are held, run when the stall ends. */
  const releases = new Set<() => void>();

  const server: Server = createServer((client) => {
    if (upstreamPort === undefined) {
      client.destroy();
      return;
    }
    const broker = tcpConnect({ host: '127.0.0.1', port: upstreamPort });
    sockets.add(client).add(broker);
    /** Correlation ids of this connection's requests whose answers the stall holds. */
    const stalled = new Set<number>();
    /** Answers waiting for the stall to end, in order; undefined while none is held. */
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
        if (frame.length >= 12 && frame.readInt16BE(4) === END_TXN) {
          const commit = endTxnCommit(frame);
          if (armedMs !== undefined && stall === undefined) {
            stall = { commit, end: Date.now() + armedMs };
            armedMs = undefined;
          }
          if (stall !== undefined && Date.now() < stall.end) {
            if (stall.commit === commit) stalled.add(frame.readInt32BE(8));
            else {
              // Another producer epoch commits: the producer gave up on the stalled commit, and the stall
              // has done its work (its answer now reaches a producer that has moved on, if any).
              stall.end = Date.now();
              for (const release of [...releases]) release();
            }
          }
        }
        broker.write(frame);
      }),
    );
    broker.on(
      'data',
      frames((frame) => {
        // Response header: correlation id (int32).
        const id = frame.length >= 8 ? frame.readInt32BE(4) : -1;
        if (stalled.delete(id) && holding === undefined && stall !== undefined && Date.now() < stall.end) {
          heldCount++;
          holding = [];
          releases.add(release);
          setTimeout(release, stall.end - Date.now()).unref();
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
    async stallNextCommit(ms, waitMs = 60_000) {
      const before = heldCount;
      stall = undefined;
      armedMs = ms;
      // Set by the connections' handlers: read through a function, which the compiler does not narrow.
      const current = () => stall;
      const waitUntil = Date.now() + waitMs;
      while (current() === undefined && Date.now() < waitUntil) await new Promise((r) => setTimeout(r, 20));
      armedMs = undefined;
      const started = current();
      if (started === undefined) return 0;
      while (Date.now() < started.end) await new Promise((r) => setTimeout(r, 50));
      for (const release of [...releases]) release();
      return heldCount - before;
    },
    async close() {
      armedMs = undefined;
      stall = undefined;
      for (const release of [...releases]) release();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
