// The load generator's HTTP client: keep-alive connections that write prebuilt request bytes and read
// back only what a benchmark needs (the status, the end of the answer). node:http's client cost 35-82 µs
// of CPU a request on this project's 2-core machines, more than the bare Fastify route it measured
// (22-52 µs), and that CPU came out of the cores the server under test shares; this costs about half
// (docs/benchmarks.md, "The load generator's own cost").
import { connect, type Socket } from 'node:net';

/** A request as bytes, written to a connection as is: its request line, headers and body. */
export function requestBytes(
  host: string,
  path: string,
  headers: Readonly<Record<string, string>>,
  body: Buffer,
): Buffer {
  const lines = [`POST ${path} HTTP/1.1`, `host: ${host}`, 'connection: keep-alive'];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  lines.push(`content-length: ${body.length}`, '', '');
  return Buffer.concat([Buffer.from(lines.join('\r\n'), 'latin1'), body]);
}

/** An answer's status, or 'error' when the connection failed or closed before the answer ended. */
export type Outcome = number | 'error';

/** Where an answer ends in the bytes read, its status, and whether the server closes the connection after it. */
export interface Answer {
  end: number;
  status: number;
  close: boolean;
}

const HEADERS_END = Buffer.from('\r\n\r\n');
const CHUNKED_END = Buffer.from('0\r\n\r\n');

/**
 * Where an answer ends in `bytes` (the offset just past it) and its status, or undefined while it is
 * incomplete. Understands a content-length body, a chunked body (up to its last-chunk and an empty
 * trailer) and no body at all.
 */
export function answerEnd(bytes: Buffer): Answer | undefined {
  const headersEnd = bytes.indexOf(HEADERS_END);
  if (headersEnd < 0) return undefined;
  const head = bytes.toString('latin1', 0, headersEnd);
  const status = Number(head.slice(9, 12));
  if (!Number.isInteger(status) || !head.startsWith('HTTP/1.'))
    throw new Error(`not an HTTP answer: ${head.slice(0, 40)}`);
  const bodyStart = headersEnd + HEADERS_END.length;
  const close = /\r\nconnection:\s*close/i.test(head);
  const length = /\r\ncontent-length:\s*(\d+)/i.exec(head);
  if (length) {
    const end = bodyStart + Number(length[1]);
    return bytes.length >= end ? { end, status, close } : undefined;
  }
  if (/\r\ntransfer-encoding:[^\r]*chunked/i.test(head)) {
    const last = bytes.indexOf(CHUNKED_END, bodyStart);
    return last < 0 ? undefined : { end: last + CHUNKED_END.length, status, close };
  }
  return { end: bodyStart, status, close };
}

interface Connection {
  socket: Socket;
  /** The bytes of the answer being read (an answer rarely comes in more than one chunk). */
  pending: Buffer | undefined;
  done: ((outcome: Outcome) => void) | undefined;
}

/**
 * Up to `maxConnections` keep-alive connections to one server, one request in flight on each (no
 * pipelining, as a platform's sender and node:http's Agent do). A request that finds every connection
 * busy waits for the first to free up; its latency, counted by the caller, includes that wait.
 */
export class RawHttpPool {
  readonly #idle: Connection[] = [];
  readonly #waiting: Array<{ request: Buffer; done: (outcome: Outcome) => void }> = [];
  readonly #all = new Set<Connection>();

  constructor(
    private readonly target: { host: string; port: number },
    private readonly maxConnections = 256,
  ) {}

  /** Sends the request bytes; `done` is called once, with the answer's status or 'error'. */
  send(request: Buffer, done: (outcome: Outcome) => void): void {
    const connection = this.#idle.pop() ?? (this.#all.size < this.maxConnections ? this.#open() : undefined);
    if (connection === undefined) this.#waiting.push({ request, done });
    else this.#write(connection, request, done);
  }

  /** Closes every connection; requests still waiting or in flight end as 'error'. */
  close(): void {
    for (const waiting of this.#waiting.splice(0)) waiting.done('error');
    for (const connection of this.#all) connection.socket.destroy();
  }

  #open(): Connection {
    const socket = connect({ host: this.target.host, port: this.target.port, noDelay: true });
    const connection: Connection = { socket, pending: undefined, done: undefined };
    this.#all.add(connection);
    socket.on('data', (chunk: Buffer) => this.#read(connection, chunk));
    socket.on('error', () => {}); // 'close' follows and settles the request in flight
    socket.on('close', () => this.#closed(connection));
    return connection;
  }

  #write(connection: Connection, request: Buffer, done: (outcome: Outcome) => void): void {
    connection.done = done;
    connection.pending = undefined;
    connection.socket.write(request);
  }

  #read(connection: Connection, chunk: Buffer): void {
    const bytes = connection.pending === undefined ? chunk : Buffer.concat([connection.pending, chunk]);
    let answer: Answer | undefined;
    try {
      answer = answerEnd(bytes);
    } catch {
      connection.socket.destroy();
      return;
    }
    if (answer === undefined) {
      connection.pending = bytes;
      return;
    }
    const done = connection.done;
    connection.done = undefined;
    connection.pending = undefined;
    // Bytes past the answer would be an answer to nothing asked: the connection is no longer usable.
    if (answer.close || answer.end !== bytes.length) connection.socket.destroy();
    else this.#release(connection);
    done?.(answer.status);
  }

  #release(connection: Connection): void {
    const next = this.#waiting.shift();
    if (next) this.#write(connection, next.request, next.done);
    else this.#idle.push(connection);
  }

  #closed(connection: Connection): void {
    this.#all.delete(connection);
    const idleAt = this.#idle.indexOf(connection);
    if (idleAt >= 0) this.#idle.splice(idleAt, 1);
    const done = connection.done;
    connection.done = undefined;
    done?.('error');
    // A request that waited for this connection's turn gets a new connection.
    const next = this.#waiting.shift();
    if (next) this.send(next.request, next.done);
  }
}
