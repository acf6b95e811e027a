// The registry serde: the only module that talks to the schema registry and knows the Confluent framing.
import { Agent as HttpsAgent } from 'node:https';
import { COMPATIBILITY, SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import type {
  SchemaRegistryAPIClient,
  SchemaRegistryAPIClientArgs,
} from '@kafkajs/confluent-schema-registry/dist/api/index.js';
import avro from 'avsc';
import { registerOrFindExisting } from './register-existing.js';
import type { RegistryAccess } from './registry-access.js';
import { loadSchema } from './schema-files.js';
import { catalogSubjects } from './topics.js';

/**
 * Every subject is registered with this level: a new schema must read data written with every earlier
 * one, since webhooks.raw is kept forever and read with the newest schema.
 */
export const COMPATIBILITY_LEVEL = COMPATIBILITY.BACKWARD_TRANSITIVE;

/** Confluent wire format: magic byte 0, then the schema id as a big-endian int32, then the Avro body. */
const MAGIC_BYTE = 0;
const HEADER_BYTES = 5;

/** The subject exists with a compatibility level other than ours: left for a person to decide. */
export class CompatibilityLevelError extends Error {
  override name = 'CompatibilityLevelError';
}

/** Lookup-only mode, and the subject does not hold the schema: `hookledger topics` registers it. */
export class SchemaNotRegisteredError extends Error {
  override name = 'SchemaNotRegisteredError';
}

export interface RegisteredSubject {
  subject: string;
  /** The schema file (without .avsc). */
  schema: string;
  id: number;
}

export interface DecodeOptions {
  /** Read with this schema (e.g. the newest one) rather than the writer's, resolving between them. */
  readerSchema?: string;
}

export interface Serde {
  /**
   * Registers a schema (Avro JSON text) under a subject with BACKWARD_TRANSITIVE; resolves to its id.
   * Lookup-only (autoRegister false): the id of this schema under the subject, or SchemaNotRegisteredError.
   */
  register(subject: string, schema: string): Promise<number>;
  /** Registers every topic's value schema as `<topic>-value`; idempotent. */
  registerAll(prefix: string): Promise<RegisteredSubject[]>;
  /** The id of the newest schema registered under a subject. */
  latestSchemaId(subject: string): Promise<number>;
  /** Avro-encodes a value with a registered schema, in the Confluent framing. */
  encode(schemaId: number, value: unknown): Promise<Buffer>;
  /** Decodes a Confluent-framed Avro value, fetching (and caching) its writer schema by id. */
  decode<T = unknown>(buffer: Buffer, options?: DecodeOptions): Promise<T>;
  /**
   * encode() without waiting, once the schema is cached (it was used before): the same bytes, or
   * undefined when encode() must be called instead (an unknown id, or a value encode() refuses: its
   * error, with the invalid paths, is encode()'s to give).
   */
  encodeCached(schemaId: number, value: unknown): Buffer | undefined;
  /**
   * decode() (writer schema) without waiting, once the writer schema is cached: the same value, or the
   * same error thrown; undefined when decode() must be called (the schema id is not cached yet).
   */
  decodeCached<T = unknown>(buffer: Buffer): T | undefined;
  /**
   * A decodeCached() that builds only the named fields of the record (the others are read past, not
   * built): those fields as decode() gives them, decode()'s errors for bytes it rejects (truncated, trailing);
   * undefined when decode() must be called (the writer schema is not cached, or lacks one of the fields).
   */
  fieldsReader<T = unknown>(fields: readonly string[]): (buffer: Buffer) => T | undefined;
}

/** Where the registry is and how to authenticate to it (registryAccess(config) builds it). */
export interface CreateSerdeOptions extends RegistryAccess {
  clientId?: string;
}

/** The schema id a Confluent-framed value was written with; throws when the framing is not there. */
export function schemaIdOf(buffer: Buffer): number {
  if (buffer.length < HEADER_BYTES || buffer[0] !== MAGIC_BYTE) {
    throw new Error('not a Confluent-framed value (expected magic byte 0 and a 4-byte schema id)');
  }
  return buffer.readInt32BE(1);
}

/** Bytes a producer leaves free ahead of an Avro value it writes itself, for the Confluent header. */
export const AVRO_HEADER_BYTES = HEADER_BYTES;

/**
 * An output value already written as Avro by its producer (the router's fast path), after
 * AVRO_HEADER_BYTES left free: the sink writes its schema id there and sends the buffer itself, with
 * no encode and no copy. The producer writes exactly the bytes the sink's schema would encode.
 */
export class EncodedAvroValue {
  constructor(readonly buffer: Buffer) {}

  framed(schemaId: number): Buffer {
    const buffer = this.buffer;
    buffer[0] = MAGIC_BYTE;
    // writeInt32BE's bytes, without its range checks: an id is a non-negative int32.
    buffer[1] = schemaId >>> 24;
    buffer[2] = (schemaId >>> 16) & 0xff;
    buffer[3] = (schemaId >>> 8) & 0xff;
    buffer[4] = schemaId & 0xff;
    return buffer;
  }
}

/** What the cached paths need of an avsc Type. */
interface AvroType {
  encode(value: unknown, buffer: Buffer, position: number): number;
  fromBuffer(buffer: Buffer, resolver?: unknown): unknown;
  readonly name?: string;
  /** A record's fields (avsc's RecordType). */
  readonly fields?: readonly { readonly name: string; readonly type: unknown }[];
}

/**
 * A reader of the named fields of records written with `writer`: the record type of those fields alone
 * (the writer's own field types, so each decodes as the writer's does) and its avsc resolver, which reads
 * past the rest. Undefined when the writer is not a record holding every named field.
 */
function projectionOf(
  writer: AvroType,
  names: readonly string[],
): { type: AvroType; resolver: unknown } | undefined {
  if (writer.fields === undefined || writer.name === undefined) return undefined;
  const wanted = new Set(names);
  const fields = writer.fields.filter((f) => wanted.has(f.name));
  if (fields.length !== wanted.size) return undefined;
  const type = avro.Type.forSchema({
    type: 'record',
    name: writer.name,
    fields: fields.map((f) => ({ name: f.name, type: f.type as avro.Type })),
  });
  return { type, resolver: type.createResolver(writer as unknown as avro.Type) };
}

/** The library's schema cache, by registry id (its `cache` field; encode and decode fill it). */
interface SchemaCache {
  getSchema(schemaId: number): { type: SchemaType; schema: AvroType } | undefined;
}

/**
 * Writes framed Avro values into one reused buffer that already holds room for the wire header, then
 * copies the value out once (the library writes into avsc's 1 KB buffer, writes a larger value a second
 * time, then concatenates the header: a second copy). The buffer grows to the largest value seen.
 */
class FramedAvroWriter {
  #buffer = Buffer.allocUnsafe(16 * 1024);

  write(schemaId: number, type: AvroType, value: unknown): Buffer {
    let end = type.encode(value, this.#buffer, HEADER_BYTES);
    if (end < 0) {
      // avsc says how many bytes were missing: grow once, write again.
      this.#buffer = Buffer.allocUnsafe(2 * (this.#buffer.length - end));
      end = type.encode(value, this.#buffer, HEADER_BYTES);
    }
    this.#buffer[0] = MAGIC_BYTE;
    this.#buffer.writeInt32BE(schemaId, 1);
    const framed = Buffer.allocUnsafe(end);
    this.#buffer.copy(framed, 0, 0, end);
    return framed;
  }
}

/** A middleware of the library's HTTP client (mappersmith), as the library types it. */
type Middleware = NonNullable<SchemaRegistryAPIClientArgs['middlewares']>[number];

/** Adds `Authorization: Bearer <token>` to every request (the library itself knows only basic auth). */
export function bearerTokenMiddleware(token: string): Middleware {
  return () => ({
    async prepareRequest(next) {
      const request = await next();
      return request.enhance({ headers: { authorization: `Bearer ${token}` } });
    },
  });
}

/**
 * Fails a request that gets no answer within `timeoutMs` (the library sets none: a registry that accepts
 * connections and never answers would hold a decode, and the poll loop awaiting it, for ever). It
 * surfaces as a 400 "Timeout (Nms)", which errors.ts classifies as transient.
 */
export function timeoutMiddleware(timeoutMs: number): Middleware {
  return () => ({
    async prepareRequest(next) {
      const request = await next();
      return request.enhance({ timeout: timeoutMs });
    },
  });
}

/** SCHEMA_REGISTRY_TIMEOUT's default. */
export const DEFAULT_REGISTRY_TIMEOUT_MS = 5_000;

export function createSerde({
  registryUrl,
  clientId = 'hookledger',
  auth,
  bearerToken,
  ca,
  autoRegister = true,
  timeoutMs = DEFAULT_REGISTRY_TIMEOUT_MS,
}: CreateSerdeOptions): Serde {
  const base = registryUrl.replace(/\/+$/, '');
  const registry = new SchemaRegistry({
    host: base,
    clientId,
    ...(auth ? { auth } : {}),
    middlewares: [timeoutMiddleware(timeoutMs), ...(bearerToken ? [bearerTokenMiddleware(bearerToken)] : [])],
    // Only for a CA of its own: otherwise Node's public CAs, as for any https URL.
    ...(ca ? { agent: new HttpsAgent({ ca, keepAlive: true }) } : {}),
  });
  // The library's own HTTP client, so that this request has the same auth, CA and retries as the others.
  const api = (registry as unknown as { api: SchemaRegistryAPIClient }).api;
  // The library's schema cache (filled by its encode and decode): read synchronously by the cached paths.
  const cache = (registry as unknown as { cache: SchemaCache }).cache;
  const writer = new FramedAvroWriter();
  const cachedAvro = (schemaId: number): AvroType | undefined => {
    const entry = cache.getSchema(schemaId);
    return entry?.type === SchemaType.AVRO ? entry.schema : undefined;
  };

  /**
   * Readers by schema text, each with its resolver per writer schema id (undefined: the writer is the
   * reader, no resolver needed; null: it cannot be resolved, read as written). Made once per pair: the
   * library builds both for every record it decodes with a reader schema.
   */
  const readers = new Map<string, { type: avro.Type; resolvers: Map<number, unknown> }>();
  const resolvedReader = (text: string, writerId: number) => {
    const writer = cachedAvro(writerId);
    if (writer === undefined) return undefined;
    let reader = readers.get(text);
    if (reader === undefined) {
      reader = { type: avro.Type.forSchema(JSON.parse(text) as avro.Schema), resolvers: new Map() };
      readers.set(text, reader);
    }
    if (!reader.resolvers.has(writerId)) {
      let resolver: unknown;
      try {
        const written = writer as unknown as avro.Type;
        resolver = reader.type.equals(written) ? undefined : reader.type.createResolver(written);
      } catch {
        resolver = null;
      }
      reader.resolvers.set(writerId, resolver);
    }
    const resolver = reader.resolvers.get(writerId);
    return resolver === null
      ? undefined
      : { reader: reader.type, resolver: resolver as avro.Resolver | undefined };
  };

  async function setCompatibility(subject: string): Promise<void> {
    try {
      await api.Subject.updateConfig({ subject, body: { compatibility: COMPATIBILITY_LEVEL } });
    } catch (error) {
      throw new Error(
        `setting ${COMPATIBILITY_LEVEL} on subject "${subject}" failed: ${(error as Error).message}`,
        { cause: error },
      );
    }
  }

  /** The id of this exact schema under the subject; undefined when the registry does not list it. */
  async function lookup(subject: string, schema: string): Promise<number | undefined> {
    try {
      const response = await api.Subject.registered({ subject, body: { schema } });
      return (response.data() as { id: number }).id;
    } catch (error) {
      if ((error as { status?: unknown }).status === 404) return undefined;
      throw error;
    }
  }

  /**
   * The schema's id, its schema in the cache: a stage's first output of a topic then needs no request,
   * so a registry that answers 401 or 404 for a moment later (a login expiring, a restart reading its
   * schemas back) cannot fail it, nor its dead letter.
   */
  async function register(subject: string, schema: string): Promise<number> {
    const id = await registerUncached(subject, schema);
    if (cachedAvro(id) === undefined) await registry.getSchema(id);
    return id;
  }

  async function registerUncached(subject: string, schema: string): Promise<number> {
    if (!autoRegister) {
      const id = await lookup(subject, schema);
      if (id !== undefined) return id;
      throw new SchemaNotRegisteredError(
        `schema subject "${subject}" does not hold this version of the schema, and SCHEMA_REGISTRY_AUTO_REGISTER=false: run \`hookledger topics\` (it registers)`,
      );
    }
    const registerOnce = () =>
      registerOrFindExisting(subject, {
        register: async () =>
          (
            await registry.register(
              { type: SchemaType.AVRO, schema },
              { subject, compatibility: COMPATIBILITY_LEVEL },
            )
          ).id,
        lookup: () => lookup(subject, schema),
      });
    try {
      return await registerOnce();
    } catch (error) {
      // The library sets our level only when GET /config/<subject> answers 404 (a new subject), and
      // refuses any other level. Apicurio answers NONE for a subject without its own rule (say, one
      // registered by another client): NONE checks nothing, so tightening it to ours is safe.
      const found = /\(\w+ != (\w+)\)/.exec((error as Error).message)?.[1];
      if ((error as Error).name !== 'ConfluentSchemaRegistryCompatibilityError') throw error;
      if (found !== COMPATIBILITY.NONE) {
        throw new CompatibilityLevelError(
          `schema subject "${subject}" has compatibility ${found ?? 'unknown'}, expected ${COMPATIBILITY_LEVEL}: set it on the registry (PUT /config/${subject}) if that is intended`,
        );
      }
      await setCompatibility(subject);
      return await registerOnce();
    }
  }

  return {
    register,
    async registerAll(prefix) {
      const registered: RegisteredSubject[] = [];
      for (const { subject, schema } of catalogSubjects(prefix)) {
        registered.push({ subject, schema, id: await register(subject, loadSchema(schema)) });
      }
      return registered;
    },
    latestSchemaId: (subject) => registry.getLatestSchemaId(subject),
    encode: (schemaId, value) => registry.encode(schemaId, value),
    encodeCached(schemaId, value) {
      const type = cachedAvro(schemaId);
      if (type === undefined) return undefined;
      try {
        return writer.write(schemaId, type, value);
      } catch {
        return undefined;
      }
    },
    decodeCached<T>(buffer: Buffer): T | undefined {
      const schemaId = schemaIdOf(buffer);
      const type = cachedAvro(schemaId);
      // As the library decodes with the writer schema: the bytes after the header, all of them.
      return type === undefined ? undefined : (type.fromBuffer(buffer.subarray(HEADER_BYTES)) as T);
    },
    fieldsReader<T>(names: readonly string[]) {
      // Per writer schema id (null: that writer cannot be read this way).
      const projections = new Map<number, { type: AvroType; resolver: unknown } | null>();
      return (buffer: Buffer): T | undefined => {
        const schemaId = schemaIdOf(buffer);
        let projection = projections.get(schemaId);
        if (projection === undefined) {
          const writer = cachedAvro(schemaId);
          if (writer === undefined) return undefined;
          projection = projectionOf(writer, names) ?? null;
          projections.set(schemaId, projection);
        }
        if (projection === null) return undefined;
        return projection.type.fromBuffer(buffer.subarray(HEADER_BYTES), projection.resolver) as T;
      };
    },
    async decode<T>(buffer: Buffer, options: DecodeOptions = {}): Promise<T> {
      const writerId = schemaIdOf(buffer);
      if (options.readerSchema === undefined) return registry.decode(buffer) as Promise<T>;
      if (cachedAvro(writerId) === undefined) await registry.getSchema(writerId);
      const resolved = resolvedReader(options.readerSchema, writerId);
      // A writer the reader cannot resolve (another record's schema): read as written.
      if (resolved === undefined) return registry.decode(buffer) as Promise<T>;
      return resolved.reader.fromBuffer(buffer.subarray(HEADER_BYTES), resolved.resolver) as T;
    },
  };
}
