// The bytes of one Kafka request and its response: DescribeConfigs (API key 32) version 1. Pure: no sockets.
//
// Why a codec of our own: librdkafka's Node binding (@confluentinc/kafka-javascript) has no describeConfigs
// (confluent-kafka-javascript issue #444; librdkafka's C API has it, the binding never wired it), and
// hookledger must read topic configs to verify existing topics. Version 1: every broker since Kafka 1.1
// speaks it, and it is the oldest one Kafka 4.x still accepts (KIP-896 removed v0 and made v1 the
// baseline). v2 only changes when throttling happens, v3 adds value types and documentation hookledger
// does not need, and v4 is the first flexible (tagged-field) version, a different encoding.
//
// The layout, from apache/kafka clients/src/main/resources/common/message/DescribeConfigs{Request,Response}.json
// and the protocol guide (all integers big-endian; STRING = int16 length + UTF-8; NULLABLE_STRING = the
// same with length -1 for null; ARRAY = int32 count + items, -1 for null; BOOLEAN = int8 0/1):
//
//   Request  = int32 size, then header v1, then body (the size counts header + body)
//     header v1: api_key int16 (32) | api_version int16 (1) | correlation_id int32 | client_id NULLABLE_STRING
//     body:      resources ARRAY of { resource_type int8 | resource_name STRING |
//                                     configuration_keys NULLABLE ARRAY of STRING (null: every key) }
//                include_synonyms BOOLEAN
//   Response = int32 size, then header v0, then body
//     header v0: correlation_id int32
//     body:      throttle_time_ms int32
//                results ARRAY of { error_code int16 | error_message NULLABLE_STRING | resource_type int8 |
//                                   resource_name STRING |
//                                   configs ARRAY of { name STRING | value NULLABLE_STRING | read_only BOOLEAN |
//                                                      config_source int8 | is_sensitive BOOLEAN |
//                                                      synonyms ARRAY of { name STRING | value NULLABLE_STRING |
//                                                                          source int8 } } }

export const DESCRIBE_CONFIGS_API_KEY = 32;
export const DESCRIBE_CONFIGS_VERSION = 1;

/** The resource types DescribeConfigs takes (org.apache.kafka.common.config.ConfigResource.Type). */
export const RESOURCE_TYPE = { TOPIC: 2, BROKER: 4 } as const;
export type ResourceType = (typeof RESOURCE_TYPE)[keyof typeof RESOURCE_TYPE];

export interface ConfigResource {
  type: ResourceType;
  /** A topic name, or a broker id as a decimal string. */
  name: string;
  /** Only these keys; all of them when absent. */
  keys?: readonly string[];
}

export interface DescribeConfigsRequest {
  correlationId: number;
  clientId: string | null;
  resources: readonly ConfigResource[];
  /** Where each value comes from besides the effective one; hookledger needs only the effective values. */
  includeSynonyms?: boolean;
}

export interface ConfigEntry {
  name: string;
  /** Null for a sensitive setting (a password), which brokers never return. */
  value: string | null;
  readOnly: boolean;
  /** DescribeConfigsResponse ConfigSource: 1 a topic's own setting, 4 a static broker default, 5 Kafka's default… */
  source: number;
  sensitive: boolean;
  synonyms: { name: string; value: string | null; source: number }[];
}

export interface ResourceResult {
  /** 0, or the broker's error code for this resource only (the others may have answered). */
  errorCode: number;
  errorMessage: string | null;
  type: number;
  name: string;
  configs: ConfigEntry[];
}

export interface DescribeConfigsResponse {
  correlationId: number;
  throttleTimeMs: number;
  results: ResourceResult[];
}

/** The response's bytes do not fit the layout: truncated, or not a DescribeConfigs v1 answer. */
export class DescribeConfigsDecodeError extends Error {
  override name = 'DescribeConfigsDecodeError';
}

/** The whole request frame, size prefix included, ready to write to a socket. */
export function encodeDescribeConfigsRequest({
  correlationId,
  clientId,
  resources,
  includeSynonyms = false,
}: DescribeConfigsRequest): Buffer {
  const w = new Writer();
  w.int16(DESCRIBE_CONFIGS_API_KEY);
  w.int16(DESCRIBE_CONFIGS_VERSION);
  w.int32(correlationId);
  w.nullableString(clientId);
  w.int32(resources.length);
  for (const resource of resources) {
    w.int8(resource.type);
    w.string(resource.name);
    if (resource.keys === undefined) w.int32(-1);
    else {
      w.int32(resource.keys.length);
      for (const key of resource.keys) w.string(key);
    }
  }
  w.int8(includeSynonyms ? 1 : 0);
  const body = w.bytes();
  const size = Buffer.alloc(4);
  size.writeInt32BE(body.length);
  return Buffer.concat([size, body]);
}

/** Decodes a response frame's payload (the bytes after its int32 size). */
export function decodeDescribeConfigsResponse(payload: Buffer): DescribeConfigsResponse {
  const r = new Reader(payload);
  const correlationId = r.int32();
  const throttleTimeMs = r.int32();
  const results = r.array('results', () => {
    const errorCode = r.int16();
    const errorMessage = r.nullableString();
    const type = r.int8();
    const name = r.string();
    const configs = r.array('configs', () => ({
      name: r.string(),
      value: r.nullableString(),
      readOnly: r.boolean(),
      source: r.int8(),
      sensitive: r.boolean(),
      synonyms: r.array('synonyms', () => ({
        name: r.string(),
        value: r.nullableString(),
        source: r.int8(),
      })),
    }));
    return { errorCode, errorMessage, type, name, configs };
  });
  if (r.remaining() !== 0)
    throw new DescribeConfigsDecodeError(
      `${r.remaining()} bytes left after the response: not DescribeConfigs v1`,
    );
  return { correlationId, throttleTimeMs, results };
}

/** Kafka's names for the error codes a DescribeConfigs result can carry (the protocol guide's table). */
const ERROR_NAMES: Readonly<Record<number, string>> = {
  [-1]: 'UNKNOWN_SERVER_ERROR',
  3: 'UNKNOWN_TOPIC_OR_PARTITION',
  7: 'REQUEST_TIMED_OUT',
  17: 'INVALID_TOPIC_EXCEPTION',
  29: 'TOPIC_AUTHORIZATION_FAILED',
  31: 'CLUSTER_AUTHORIZATION_FAILED',
  35: 'UNSUPPORTED_VERSION',
  40: 'INVALID_CONFIG',
  42: 'INVALID_REQUEST',
  44: 'POLICY_VIOLATION',
  87: 'INVALID_RECORD',
};

export function errorName(code: number): string {
  return ERROR_NAMES[code] ?? `error code ${code}`;
}

class Writer {
  readonly #chunks: Buffer[] = [];

  int8(value: number): void {
    const b = Buffer.alloc(1);
    b.writeInt8(value);
    this.#chunks.push(b);
  }

  int16(value: number): void {
    const b = Buffer.alloc(2);
    b.writeInt16BE(value);
    this.#chunks.push(b);
  }

  int32(value: number): void {
    const b = Buffer.alloc(4);
    b.writeInt32BE(value);
    this.#chunks.push(b);
  }

  string(value: string): void {
    const bytes = Buffer.from(value, 'utf8');
    if (bytes.length > 0x7fff)
      throw new RangeError(`string of ${bytes.length} bytes does not fit an int16 length`);
    this.int16(bytes.length);
    this.#chunks.push(bytes);
  }

  nullableString(value: string | null): void {
    if (value === null) this.int16(-1);
    else this.string(value);
  }

  bytes(): Buffer {
    return Buffer.concat(this.#chunks);
  }
}

/** Reads the layout front to back; every read checks that the bytes are there. */
class Reader {
  #offset = 0;

  constructor(private readonly buffer: Buffer) {}

  remaining(): number {
    return this.buffer.length - this.#offset;
  }

  #take(length: number, what: string): number {
    if (this.remaining() < length)
      throw new DescribeConfigsDecodeError(
        `response truncated: ${what} needs ${length} bytes at offset ${this.#offset}, ${this.remaining()} left`,
      );
    const at = this.#offset;
    this.#offset += length;
    return at;
  }

  int8(): number {
    return this.buffer.readInt8(this.#take(1, 'int8'));
  }

  int16(): number {
    return this.buffer.readInt16BE(this.#take(2, 'int16'));
  }

  int32(): number {
    return this.buffer.readInt32BE(this.#take(4, 'int32'));
  }

  boolean(): boolean {
    return this.int8() !== 0;
  }

  string(): string {
    const value = this.nullableString();
    if (value === null)
      throw new DescribeConfigsDecodeError(`null where a string is required (offset ${this.#offset})`);
    return value;
  }

  nullableString(): string | null {
    const length = this.int16();
    if (length < 0) return null;
    const at = this.#take(length, 'string');
    return this.buffer.toString('utf8', at, at + length);
  }

  /** An array; a null one (count -1) reads as empty, which only optional arrays use. */
  array<T>(what: string, item: () => T): T[] {
    const count = this.int32();
    // Each item takes at least one byte: a count past the bytes left is garbage, not a huge array.
    if (count > this.remaining())
      throw new DescribeConfigsDecodeError(
        `response truncated: ${count} ${what} announced, ${this.remaining()} bytes left`,
      );
    const items: T[] = [];
    for (let i = 0; i < count; i++) items.push(item());
    return items;
  }
}
