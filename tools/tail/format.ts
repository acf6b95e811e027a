// How `hookledger tail` prints a record: one JSON object per line, every value JSON-safe (bytes as
// UTF-8 text when they are valid UTF-8, else base64, with the choice named in `encodings`).

export type BytesEncoding = 'utf8' | 'base64';

export interface TailRecord {
  topic: string;
  partition: number;
  /** Kafka offsets arrive as decimal strings. */
  offset: string;
  /** Milliseconds since the epoch, as a decimal string. */
  timestamp: string;
  key: Buffer | null;
  /** The decoded value; a Buffer when it is not registry-framed; null for a tombstone. */
  value: unknown;
  headers?: Record<string, Buffer | string | (Buffer | string)[] | undefined>;
  /** Why the value could not be decoded (it is then printed as its bytes). */
  decodeError?: string;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

// Control characters other than tab, newline and carriage return: binary that happens to decode.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching them is the point
const BINARY = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;

/** Bytes as text when they are valid UTF-8 text, else base64, and which of the two it is. */
export function bytesText(bytes: Uint8Array): { text: string; encoding: BytesEncoding } {
  try {
    const text = utf8.decode(bytes);
    if (!BINARY.test(text)) return { text, encoding: 'utf8' };
  } catch {
    // Not UTF-8: base64 below.
  }
  return {
    text: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64'),
    encoding: 'base64',
  };
}

/**
 * A decoded value made JSON-safe: bytes as text (their encoding recorded under their path), bigints
 * as decimal strings, dates as ISO text, maps as objects, undefined as null.
 */
export function jsonSafe(value: unknown, path: string, encodings: Record<string, BytesEncoding>): unknown {
  if (value === null || value === undefined) return null;
  if (value instanceof Uint8Array) {
    const { text, encoding } = bytesText(value);
    encodings[path] = encoding;
    return text;
  }
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'number') return Number.isFinite(value) ? value : String(value);
  if (typeof value !== 'object') return value;
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString();
  if (Array.isArray(value)) return value.map((item, i) => jsonSafe(item, `${path}[${i}]`, encodings));
  const entries = value instanceof Map ? [...value.entries()] : Object.entries(value);
  return Object.fromEntries(
    entries.map(([k, v]) => [String(k), jsonSafe(v, `${path}.${String(k)}`, encodings)]),
  );
}

function timestampText(ms: string): string | null {
  const n = Number(ms);
  return Number.isFinite(n) && n >= 0 ? new Date(n).toISOString() : null;
}

/** The line for one record: `{topic, partition, offset, timestamp, key, value[, headers][, encodings]}`. */
export function formatRecord(record: TailRecord): string {
  const encodings: Record<string, BytesEncoding> = {};
  const line: Record<string, unknown> = {
    topic: record.topic,
    partition: record.partition,
    offset: Number.isSafeInteger(Number(record.offset)) ? Number(record.offset) : record.offset,
    timestamp: timestampText(record.timestamp),
    key: null,
    value: jsonSafe(record.value, 'value', encodings),
  };
  if (record.key !== null) {
    const { text, encoding } = bytesText(record.key);
    line.key = text;
    // A UTF-8 key is the norm (every hookledger key is text): name the encoding only when it is not.
    if (encoding !== 'utf8') encodings.key = encoding;
  }
  const headers = Object.entries(record.headers ?? {}).filter(([, v]) => v !== undefined);
  if (headers.length > 0) {
    line.headers = Object.fromEntries(
      headers.map(([name, v]) => {
        const values = (Array.isArray(v) ? v : [v]).map((item, i) => {
          if (typeof item === 'string') return item;
          const { text, encoding } = bytesText(item!);
          if (encoding !== 'utf8')
            encodings[Array.isArray(v) ? `headers.${name}[${i}]` : `headers.${name}`] = encoding;
          return text;
        });
        return [name, Array.isArray(v) ? values : values[0]];
      }),
    );
  }
  if (record.decodeError !== undefined) line.decodeError = record.decodeError;
  if (Object.keys(encodings).length > 0) line.encodings = encodings;
  return JSON.stringify(line);
}
