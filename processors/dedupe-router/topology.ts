// The dedupe-router as data: webhooks.raw → DedupeProcessor → unique, entity.*, failures, dlq; its
// store logs to webhooks.dedupe-changelog. Topic names come in, so replay runs it side by side.
import { isRegistryAnswer } from '../../runtime/streams/errors.js';
import type { SinkNode, SourceMessage, Topology } from '../../runtime/streams/topology.js';
import { isRawEnvelope, type RawEnvelope } from '../../schemas/raw-envelope.js';
import { EncodedAvroValue, type Serde, schemaIdOf } from '../../schemas/serde.js';
import { buildDeadLetter, DLQ_REASONS, type DlqReason } from './dead-letter.js';
import { DedupeProcessor } from './dedupe-processor.js';
import { DEDUPE_STORE, DedupeStore, IdSetBacking } from './dedupe-store.js';
import { isUndecodable, type RawInput, UNDECODABLE_REASON, undecodableDeadLetter } from './poison.js';
import type { RouteContext, RouteDecision, RouteSettings, RouteTopic } from './route.js';

/** Every topic the router writes besides its changelog, by logical name (route.ts's names). */
export const ROUTER_OUTPUTS: readonly RouteTopic[] = [
  'webhooks.unique',
  'entity.user',
  'entity.account',
  'entity.document',
  'entity.todo',
  'entity.energy-switch',
  'entity.energy-switch-commission',
  'entity.other',
  'webhooks.failures',
  'webhooks.dlq',
];

/** Outputs keyed as raw go to the raw record's partition number, in raw's order. */
const COPARTITIONED = new Set<RouteTopic>(['webhooks.unique', 'webhooks.dlq']);

export interface DedupeTopologyOptions {
  /** webhooks.raw's real name. */
  rawTopic: string;
  changelogTopic: string;
  /** The real topic of each logical output. */
  topicOf(logical: RouteTopic): string;
  /** The registry schema id of each real output topic's values (looked up once at start). */
  schemaIds: ReadonlyMap<string, number>;
  serde: Serde;
  windowMs: number;
  /** Topology (app) name; transactional ids derive from the app id, not this. */
  name?: string;
  /** Routing settings (WEBHOOK_DATE_ZONE): live and replay must pass the same, so a replay equals live. */
  routeSettings?: RouteSettings;
  /** Routing; route() unless a test emulates the router before a fix (redrive's test). */
  route?: (envelope: RawEnvelope, context: RouteContext) => RouteDecision;
}

/** A raw record that is not an envelope the router can read: dead-lettered with what it had. */
function poisonInput(message: SourceMessage, text: string): RawInput {
  return {
    ok: false,
    message: text,
    key: message.key?.toString('utf8') ?? null,
    value: message.value,
    timestamp: message.timestamp,
    position: `${message.topic}/${message.partition}/${message.offset}`,
  };
}

/**
 * The bytes themselves (framing, Avro) are poison at once. The registry's own answer (a schema id it
 * does not know) is thrown: a registry that is starting answers so until it has read its schemas back,
 * and the runtime dead-letters the record only after its attempts (the source's poison).
 */
function undecodable(message: SourceMessage, error: unknown): RawInput {
  if (!isUndecodable(error) || isRegistryAnswer(error)) throw error;
  return poisonInput(message, (error as Error).message);
}

export function dedupeTopology({
  rawTopic,
  changelogTopic,
  topicOf,
  schemaIds,
  serde,
  windowMs,
  name = 'dedupe-router',
  routeSettings = {},
  route,
}: DedupeTopologyOptions): Topology<RawInput> {
  const uniqueSchemaId = schemaIds.get(topicOf('webhooks.unique'));
  // The envelope decoded last and its bytes, when they were written with webhooks.unique's schema: the
  // router forwards that very object to webhooks.unique, whose value is then these bytes, not encoded again.
  let lastEnvelope: RawEnvelope | undefined;
  let lastEnvelopeBytes: Buffer | undefined;
  const remember = (envelope: RawEnvelope, bytes: Buffer): RawEnvelope => {
    const reusable = schemaIdOf(bytes) === uniqueSchemaId;
    lastEnvelope = reusable ? envelope : undefined;
    lastEnvelopeBytes = reusable ? bytes : undefined;
    return envelope;
  };
  // Decoded with the schema the record names: a record written to raw under another registered schema
  // (by hand, with the wrong subject) decodes as that, and is poison, not an envelope.
  const inputOf = (message: SourceMessage, bytes: Buffer, decoded: unknown): RawInput =>
    isRawEnvelope(decoded)
      ? { ok: true, envelope: remember(decoded, bytes) }
      : poisonInput(message, `not a raw envelope: schema id ${schemaIdOf(bytes)} is another record's`);
  const sinks: SinkNode[] = ROUTER_OUTPUTS.map((logical) => {
    const topic = topicOf(logical);
    const schemaId = schemaIds.get(topic);
    if (schemaId === undefined) throw new Error(`no registered value schema for ${topic}`);
    // Synchronous once the schema is cached (the first record of each sink waits for the registry); a
    // value the router's fast path wrote as Avro already only gets its header.
    const encode = (value: unknown) =>
      value instanceof EncodedAvroValue
        ? value.framed(schemaId)
        : (serde.encodeCached(schemaId, value) ?? serde.encode(schemaId, value));
    return {
      name: logical,
      topic,
      copartitioned: COPARTITIONED.has(logical),
      serialize:
        logical === 'webhooks.unique'
          ? (value: unknown) =>
              value === lastEnvelope && lastEnvelopeBytes !== undefined ? lastEnvelopeBytes : encode(value)
          : encode,
    };
  });
  return {
    name,
    sources: [
      {
        topic: rawTopic,
        deserialize(message): RawInput | Promise<RawInput> {
          if (message.value === null) return poisonInput(message, 'the record has no value');
          const value = message.value;
          try {
            schemaIdOf(value);
            // Synchronous once the writer schema is cached; the registry is asked (and waited for) once per id.
            const decoded = serde.decodeCached(value);
            if (decoded !== undefined) return inputOf(message, value, decoded);
          } catch (error) {
            return undecodable(message, error);
          }
          return serde.decode(value).then(
            (decoded) => inputOf(message, value, decoded),
            (error: unknown) => undecodable(message, error),
          );
        },
        // A record whose decode failed every attempt (the registry kept saying it does not know its schema).
        poison: (message, reason) => poisonInput(message, reason),
      },
    ],
    processor: { name: 'dedupe', create: () => new DedupeProcessor(routeSettings, route) },
    stores: [
      {
        name: DEDUPE_STORE,
        changelogTopic: () => changelogTopic,
        create: (_partition, stateDir) => new DedupeStore(windowMs, IdSetBacking.of(stateDir)),
      },
    ],
    sinks,
    // A delivery the router throws on (a bug) is dead-lettered and remembered as such, so a retry of
    // it is a duplicate and a redrive after the fix processes it once; its partition goes on.
    deadLetter: {
      sink: 'webhooks.dlq',
      build(record, failure, context) {
        const input = record.value;
        if (!input.ok) {
          // Not an envelope it could read (given up after its attempts): undecodable, whatever was thrown.
          context.instrument('processor.dedupe.routed', {
            route: 'dead-lettered',
            reason: UNDECODABLE_REASON,
          });
          const letter = undecodableDeadLetter(input, record.headers);
          return { key: input.key ?? `offset:${input.position}`, value: letter };
        }
        const reason: DlqReason = (DLQ_REASONS as readonly string[]).includes(failure.reason)
          ? (failure.reason as DlqReason)
          : 'processor-error';
        const message = `${reason}: ${failure.message}`;
        context.instrument('processor.dedupe.routed', { route: 'dead-lettered', reason });
        const { envelope } = input;
        const store = context.getStore<DedupeStore>(DEDUPE_STORE);
        const id = `${envelope.source}/${envelope.webhookId}`;
        // An id already routed (or answered by a failure) keeps that decision: this attempt (a retry the
        // router threw on) is dead-lettered, and a redrive of it is then the duplicate it is. Overwritten,
        // the redrive would route the id a second time.
        const earlier = store.get(id);
        if (earlier === undefined || earlier.kind === 'dead-lettered')
          store.put(id, { kind: 'dead-lettered', seenAt: record.timestamp }, record.timestamp);
        return {
          key: envelope.webhookId,
          value: buildDeadLetter(envelope, reason, message, 'dedupe-router.process'),
        };
      },
    },
  };
}
