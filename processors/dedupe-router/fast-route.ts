// The router's fast path for the common delivery (issue #20): the body scanned once into byte ranges
// (delivery-scan.ts) and the entity event written as Avro from them (avro-out.ts), with no parse tree, no
// zod and no event object. It takes on only what it can prove route() routes, and answers undefined for
// everything else (deletions, failures, energy switches, dead letters, escapes in keys or ids, …), which
// route() then decides unchanged: reasons and messages stay its own.
// test/unit/processors/dedupe-router/fast-body-equivalence.test.ts holds the two to the same bytes.
import type { RawEnvelope } from '../../schemas/raw-envelope.js';
import { AVRO_HEADER_BYTES, EncodedAvroValue } from '../../schemas/serde.js';
import * as avro from './avro-out.js';
import type { DlqReason } from './dead-letter.js';
import { scanDelivery } from './delivery-scan.js';
import { parseInstantBytes } from './instant.js';
import {
  type DecisionKind,
  entityKey,
  type RouteContext,
  type RouteSettings,
  type RouteTopic,
} from './route.js';
import { parseTrigger, type Trigger } from './trigger.js';

/** A decision whose values may be Avro already written (EncodedAvroValue): what the processor forwards. */
export interface RoutedOutputs {
  readonly kind: DecisionKind;
  readonly outputs: readonly { readonly topic: RouteTopic; readonly key: string; readonly value: unknown }[];
  readonly reason: DlqReason | null;
}

/** A trigger name's parse and its three strings' Avro (trigger, entity, action), made once per name. */
interface KnownTrigger {
  readonly trigger: Trigger;
  readonly avro: Buffer;
}

/** Caches of small, repeating strings; cleared when this large (a sender inventing names cannot grow them). */
const CACHE_LIMIT = 1024;
const triggers = new Map<string, KnownTrigger | null>();
const sources = new Map<string, Buffer>();

function encodedStrings(...values: string[]): Buffer {
  avro.begin();
  for (const value of values) avro.writeString(value);
  return avro.finish().subarray(AVRO_HEADER_BYTES);
}

function knownTrigger(name: string): KnownTrigger | null {
  let known = triggers.get(name);
  if (known === undefined) {
    const trigger = parseTrigger(name);
    known =
      trigger === undefined ? null : { trigger, avro: encodedStrings(name, trigger.entity, trigger.action) };
    if (triggers.size >= CACHE_LIMIT) triggers.clear();
    triggers.set(name, known);
  }
  return known;
}

function sourceAvro(source: string): Buffer {
  let known = sources.get(source);
  if (known === undefined) {
    known = encodedStrings(source);
    if (sources.size >= CACHE_LIMIT) sources.clear();
    sources.set(source, known);
  }
  return known;
}

/** Whether the body's bytes `[start, end)` are the UTF-8 of `text`. */
function bytesEqual(body: Buffer, start: number, end: number, text: string): boolean {
  // UTF-8 takes at least as many bytes as UTF-16 takes units.
  if (text.length > end - start) return false;
  if (text.length < end - start) return body.toString('utf8', start, end) === text;
  for (let k = 0; k < text.length; k++) {
    const c = text.charCodeAt(k);
    if (c >= 0x80) return body.toString('utf8', start, end) === text;
    if (body[start + k] !== c) return false;
  }
  return true;
}

/** No lone surrogate (String.prototype.isWellFormed, Node 20; the project's TypeScript lib predates it). */
const wellFormed = (text: string): boolean => (text as unknown as { isWellFormed(): boolean }).isWellFormed();

/** Whether the bytes are ASCII (then latin1 reads them as UTF-8 does, and cheaper). */
function ascii(body: Buffer, start: number, end: number): boolean {
  for (let k = start; k < end; k++) if (body[k]! >= 0x80) return false;
  return true;
}

/**
 * route()'s decision for a delivery of the common shape to an entity stream other than the energy
 * switch's, written as Avro; undefined when route() must decide.
 */
export function routeFast(
  envelope: RawEnvelope,
  settings: RouteSettings = {},
  context: RouteContext = {},
): RoutedOutputs | undefined {
  const { webhookId, source, ingestId } = envelope;
  // avsc writes a lone surrogate its own way: such strings are left to it.
  if (!wellFormed(webhookId) || !wellFormed(source) || !wellFormed(ingestId)) return undefined;
  const body = envelope.body;
  const index = scanDelivery(body);
  if (index === undefined) return undefined;

  if (index.idEnd === index.idStart || !bytesEqual(body, index.idStart, index.idEnd, webhookId))
    return undefined;
  if (!ascii(body, index.triggerStart, index.triggerEnd)) return undefined;
  const known = knownTrigger(body.toString('latin1', index.triggerStart, index.triggerEnd));
  // Deletions answer with failures or null, energy switches have typed fields: route() writes those.
  if (known === null || known.trigger.deletes || known.trigger.topic === 'entity.energy-switch')
    return undefined;
  const trigger = known.trigger;

  if (!ascii(body, index.dateStart, index.dateEnd)) return undefined;
  const occurredAt = parseInstantBytes(
    body,
    index.dateStart,
    index.dateEnd,
    settings.webhookDateOffsetMinutes,
  );
  if (occurredAt === undefined) return undefined;
  if (context.operatorApproved !== true) {
    const age = envelope.receivedAt - occurredAt;
    if (settings.maxAgeMs !== undefined && age > settings.maxAgeMs) return undefined;
    if (settings.maxAheadMs !== undefined && -age > settings.maxAheadMs) return undefined;
  }

  // recordSchema: a non-empty `__typename`; the OperationFailure is route()'s. The id: a non-empty
  // string or a number (else route() looks in query.variables).
  const typenameLength = index.typenameEnd - index.typenameStart;
  if (typenameLength === 0) return undefined;
  if (
    typenameLength === 16 &&
    body.toString('latin1', index.typenameStart, index.typenameEnd) === 'OperationFailure'
  )
    return undefined;
  if (index.entityIdStart < 0 || index.entityIdEnd === index.entityIdStart) return undefined;
  const entityId = body.toString('utf8', index.entityIdStart, index.entityIdEnd);

  const sourceBytes = sourceAvro(source);
  avro.begin();
  avro.writeString(webhookId);
  avro.writeEncoded(sourceBytes);
  avro.writeString(ingestId);
  avro.writeEncoded(known.avro);
  avro.writeBoolean(false);
  avro.writeLong(occurredAt);
  avro.writeLong(envelope.receivedAt);
  avro.writeBytesAsString(body, index.entityIdStart, index.entityIdEnd);
  if (index.variablesStart < 0) avro.writeBranch(0);
  else {
    avro.writeBranch(1);
    avro.writeCompactJson(body, index.variablesStart, index.variablesEnd, index.variablesIrregular);
  }
  if (index.paths > 0) {
    avro.writeLong(index.paths);
    for (let p = 0; p < index.paths; p++)
      avro.writeJoinedAsString(body, index.pathKeys, index.pathOffsets[p]!, index.pathLengths[p]!);
  }
  avro.writeLong(0);
  avro.writeCompactJson(body, index.rootStart, index.rootEnd, index.rootIrregular);
  const event = new EncodedAvroValue(avro.finish());

  return {
    kind: 'routed',
    outputs: [
      { topic: 'webhooks.unique', key: webhookId, value: envelope },
      { topic: trigger.topic, key: entityKey(source, trigger, entityId), value: event },
    ],
    reason: null,
  };
}
