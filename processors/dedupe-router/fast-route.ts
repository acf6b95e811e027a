// The router's fast path for the common delivery (issue #20): the body scanned once into byte ranges
// (delivery-scan.ts) and the entity events written as Avro from them (avro-out.ts), with no parse tree, no
// zod and no event object. It takes on only what it can prove route() routes, and answers undefined for
// everything else (deletions, failures, dead letters, escapes in keys, ids or typed fields, …), which
// route() then decides unchanged: reasons and messages stay its own.
// test/unit/processors/dedupe-router/fast-body-equivalence.test.ts holds the two to the same bytes.
import type { RawEnvelope } from '../../schemas/raw-envelope.js';
import { AVRO_HEADER_BYTES, EncodedAvroValue } from '../../schemas/serde.js';
import * as avro from './avro-out.js';
import { AVRO_LONG_MAX } from './contract.js';
import type { DlqReason } from './dead-letter.js';
import {
  COMMISSION,
  DATE,
  type DeliveryIndex,
  FUEL_TYPE,
  FUELS_SWITCHED,
  FUELS_WAITING_FOR_UPDATE,
  FUELS_WITH_COMMISSION_EXPECTED,
  FUELS_WITH_COMMISSION_RECEIVED,
  FUELS_WITH_SWITCH_TERMINATED,
  POSTCODE,
  PROJECTED_SPEND,
  PROJECTED_SPEND_AMOUNT,
  PROJECTED_SPEND_CURRENCY,
  PROVIDER,
  PROVIDER_CODE,
  PROVIDER_NAME,
  SAVINGS,
  SAVINGS_AMOUNT,
  SAVINGS_CURRENCY,
  STATUS,
  STATUS_DATE,
  scanDelivery,
  TARIFF_NAME,
  USER,
  USER_ID,
  USER_SWITCH_REFERENCE_ID,
  USER_TENANT_ID,
} from './delivery-scan.js';
import { parseInstantBytes } from './instant.js';
import {
  type DecisionKind,
  entityKey,
  maxFieldPathBytes,
  type RouteContext,
  type RouteSettings,
  type RouteTopic,
} from './route.js';
import { parseTrigger, type Trigger, triggerOfType } from './trigger.js';

/** A decision whose values may be Avro already written (EncodedAvroValue): what the processor forwards. */
export interface RoutedOutputs {
  readonly kind: DecisionKind;
  readonly outputs: readonly { readonly topic: RouteTopic; readonly key: string; readonly value: unknown }[];
  readonly reason: DlqReason | null;
}

/** A trigger name's parse and its strings' Avro (trigger, entity and action together; trigger; action). */
interface KnownTrigger {
  readonly trigger: Trigger;
  readonly avro: Buffer;
  readonly triggerAvro: Buffer;
  readonly actionAvro: Buffer;
}

/** Caches of small, repeating strings; cleared when this large (a sender inventing names cannot grow them). */
const CACHE_LIMIT = 1024;
/**
 * A trigger name longer than this is parsed each time, never cached: its length is the sender's, and
 * 1,024 names of a megabyte each (held three times over with their Avro) would be gigabytes.
 */
const CACHED_TRIGGER_MAX_LENGTH = 256;
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
      trigger === undefined
        ? null
        : {
            trigger,
            avro: encodedStrings(name, trigger.entity, trigger.action),
            triggerAvro: encodedStrings(name),
            actionAvro: encodedStrings(trigger.action),
          };
    if (name.length > CACHED_TRIGGER_MAX_LENGTH) return known;
    if (triggers.size >= CACHE_LIMIT) triggers.clear();
    triggers.set(name, known);
  }
  return known;
}

const ORIGIN_DELIVERY = encodedStrings('delivery');

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

/** Whether the record's `__typename` makes the delivery another entity's event: route() writes those. */
function typenameRetypes(body: Buffer, index: DeliveryIndex, trigger: Trigger): boolean {
  // The scan takes a type name without escapes only (scanPlainString): its bytes are its UTF-8.
  return triggerOfType(trigger, body.toString('utf8', index.typenameStart, index.typenameEnd)) !== trigger;
}

/** What both events of a delivery are written from, once its checks passed. */
interface Checked {
  readonly envelope: RawEnvelope;
  readonly index: DeliveryIndex;
  readonly known: KnownTrigger;
  readonly occurredAt: number;
}

/**
 * route()'s decision for a delivery of the common shape to an entity stream (the energy switch's with
 * its commission event included), written as Avro; undefined when route() must decide.
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
  const index = scanDelivery(body, maxFieldPathBytes(settings));
  if (index === undefined) return undefined;

  if (index.idEnd === index.idStart || !bytesEqual(body, index.idStart, index.idEnd, webhookId))
    return undefined;
  if (!ascii(body, index.triggerStart, index.triggerEnd)) return undefined;
  const known = knownTrigger(body.toString('latin1', index.triggerStart, index.triggerEnd));
  // Deletions answer with failures or null: route() writes those.
  if (known === null || known.trigger.deletes) return undefined;
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
  // A type name other than the trigger's entity may make it another entity's event (triggerOfType).
  if (
    trigger.topic !== 'entity.other' &&
    !bytesEqual(body, index.typenameStart, index.typenameEnd, trigger.entity) &&
    typenameRetypes(body, index, trigger)
  )
    return undefined;
  const checked: Checked = { envelope, index, known, occurredAt };
  const entityId = body.toString('utf8', index.entityIdStart, index.entityIdEnd);
  const key = entityKey(source, trigger, entityId);
  const unique = { topic: 'webhooks.unique', key: webhookId, value: envelope } as const;

  if (trigger.topic === 'entity.energy-switch') {
    if (!energySwitchValid(body, index)) return undefined;
    const event = new EncodedAvroValue(writeEnergySwitchEvent(checked));
    const outputs: RoutedOutputs['outputs'][number][] = [unique, { topic: trigger.topic, key, value: event }];
    if (index.typedStart[COMMISSION]! >= 0) {
      const commission = new EncodedAvroValue(writeCommissionEvent(checked));
      outputs.push({ topic: 'entity.energy-switch-commission', key, value: commission });
    }
    return { kind: 'routed', outputs, reason: null };
  }
  writeEntityEventFields(checked);
  const event = new EncodedAvroValue(avro.finish());
  return {
    kind: 'routed',
    outputs: [unique, { topic: trigger.topic, key, value: event }],
    reason: null,
  };
}

/** The fields of entity-event.avsc (which entity-energy-switch.avsc starts with), from begin(). */
function writeEntityEventFields({ envelope, index, known, occurredAt }: Checked): void {
  const body = envelope.body;
  const sourceBytes = sourceAvro(envelope.source);
  avro.begin();
  avro.writeString(envelope.webhookId);
  avro.writeEncoded(sourceBytes);
  avro.writeString(envelope.ingestId);
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
}

const INTEGER_SLOTS = [
  FUELS_SWITCHED,
  FUELS_WAITING_FOR_UPDATE,
  FUELS_WITH_SWITCH_TERMINATED,
  FUELS_WITH_COMMISSION_EXPECTED,
  FUELS_WITH_COMMISSION_RECEIVED,
];

/**
 * What energySwitchSchema accepts, checked on the index: `__typename` EnergySwitch, a string id, every
 * typed field of its type or null (strings without escapes: route() decodes those), integers written as
 * integers (2, not 2.0, 2e0 or "2", which route() reads) within avsc's longs, a statusDate that parses;
 * and query.api without escapes.
 */
function energySwitchValid(body: Buffer, index: DeliveryIndex): boolean {
  if (index.typedInvalid || !index.entityIdIsString) return false;
  if (index.apiStart >= 0 && index.apiEscaped) return false;
  if (
    index.typenameEnd - index.typenameStart !== 12 ||
    body.toString('latin1', index.typenameStart, index.typenameEnd) !== 'EnergySwitch'
  )
    return false;
  for (const slot of INTEGER_SLOTS) {
    const start = index.typedStart[slot]!;
    if (start < 0) continue;
    const text = body.toString('latin1', start, index.typedEnd[slot]!);
    if (!INTEGER_TEXT.test(text) || !Number.isSafeInteger(Number(text))) return false;
    // avsc refuses ±(2^53 − 1) as a long: route()'s event then fails to encode, which is the runtime's to handle.
    if (Math.abs(Number(text)) > AVRO_LONG_MAX) return false;
  }
  const statusDate = index.typedStart[STATUS_DATE]!;
  if (statusDate >= 0 && parseInstantBytes(body, statusDate, index.typedEnd[STATUS_DATE]!) === undefined)
    return false;
  return true;
}

/** A typed string or number's text as an Avro ["null", "string"]. */
function writeOptionalText(body: Buffer, index: DeliveryIndex, slot: number): void {
  const start = index.typedStart[slot]!;
  if (start < 0) avro.writeBranch(0);
  else {
    avro.writeBranch(1);
    avro.writeBytesAsString(body, start, index.typedEnd[slot]!);
  }
}

/** A typed integer as an Avro ["null", "long"]. */
function writeOptionalLong(body: Buffer, index: DeliveryIndex, slot: number): void {
  const start = index.typedStart[slot]!;
  if (start < 0) avro.writeBranch(0);
  else {
    avro.writeBranch(1);
    avro.writeLong(Number(body.toString('latin1', start, index.typedEnd[slot]!)));
  }
}

/** A typed object as an Avro ["null", record] of the fields in `slots`, each ["null", "string"]. */
function writeOptionalRecord(body: Buffer, index: DeliveryIndex, slot: number, fields: number[]): void {
  if (index.typedStart[slot]! < 0) avro.writeBranch(0);
  else {
    avro.writeBranch(1);
    for (const field of fields) writeOptionalText(body, index, field);
  }
}

/** The commission record's fields (entity-energy-switch's Commission, the commission event's). */
function writeCommissionFields(body: Buffer, index: DeliveryIndex): void {
  writeOptionalLong(body, index, FUELS_WAITING_FOR_UPDATE);
  writeOptionalLong(body, index, FUELS_WITH_SWITCH_TERMINATED);
  writeOptionalLong(body, index, FUELS_WITH_COMMISSION_EXPECTED);
  writeOptionalLong(body, index, FUELS_WITH_COMMISSION_RECEIVED);
  writeOptionalText(body, index, STATUS_DATE);
  writeOptionalText(body, index, STATUS);
}

/** entity-energy-switch.avsc: the entity event's fields, then the contract's typed fields. */
function writeEnergySwitchEvent(checked: Checked): Buffer {
  const { index } = checked;
  const body = checked.envelope.body;
  writeEntityEventFields(checked);
  writeOptionalText(body, index, DATE);
  writeOptionalRecord(body, index, USER, [USER_ID, USER_TENANT_ID]);
  writeOptionalText(body, index, USER_SWITCH_REFERENCE_ID);
  writeOptionalText(body, index, POSTCODE);
  writeOptionalRecord(body, index, PROVIDER, [PROVIDER_CODE, PROVIDER_NAME]);
  writeOptionalText(body, index, TARIFF_NAME);
  writeOptionalRecord(body, index, PROJECTED_SPEND, [PROJECTED_SPEND_CURRENCY, PROJECTED_SPEND_AMOUNT]);
  writeOptionalRecord(body, index, SAVINGS, [SAVINGS_CURRENCY, SAVINGS_AMOUNT]);
  writeOptionalText(body, index, FUEL_TYPE);
  writeOptionalLong(body, index, FUELS_SWITCHED);
  if (index.typedStart[COMMISSION]! < 0) avro.writeBranch(0);
  else {
    avro.writeBranch(1);
    writeCommissionFields(body, index);
  }
  if (index.apiStart < 0) avro.writeBranch(0);
  else {
    avro.writeBranch(1);
    avro.writeBytesAsString(body, index.apiStart, index.apiEnd);
  }
  avro.writeEncoded(ORIGIN_DELIVERY);
  return avro.finish();
}

/** entity-energy-switch-commission.avsc, for a record whose commission is an object. */
function writeCommissionEvent({ envelope, index, known, occurredAt }: Checked): Buffer {
  const body = envelope.body;
  const sourceBytes = sourceAvro(envelope.source);
  avro.begin();
  avro.writeString(envelope.webhookId);
  avro.writeEncoded(sourceBytes);
  avro.writeString(envelope.ingestId);
  avro.writeEncoded(known.triggerAvro);
  avro.writeEncoded(known.actionAvro);
  avro.writeLong(occurredAt);
  avro.writeLong(envelope.receivedAt);
  avro.writeBytesAsString(body, index.entityIdStart, index.entityIdEnd);
  // record.user?.id ?? null
  if (index.typedStart[USER]! >= 0) writeOptionalText(body, index, USER_ID);
  else avro.writeBranch(0);
  writeCommissionFields(body, index);
  const statusDate = index.typedStart[STATUS_DATE]!;
  if (statusDate < 0) avro.writeBranch(0);
  else {
    avro.writeBranch(1);
    avro.writeLong(parseInstantBytes(body, statusDate, index.typedEnd[STATUS_DATE]!)!);
  }
  // The commission leaves: the paths whose first key is `commission`.
  let count = 0;
  for (let p = 0; p < index.paths; p++) if (startsAtCommission(body, index, p)) count++;
  if (count > 0) {
    avro.writeLong(count);
    for (let p = 0; p < index.paths; p++)
      if (startsAtCommission(body, index, p))
        avro.writeJoinedAsString(body, index.pathKeys, index.pathOffsets[p]!, index.pathLengths[p]!);
  }
  avro.writeLong(0);
  avro.writeCompactJson(
    body,
    index.typedStart[COMMISSION]!,
    index.typedEnd[COMMISSION]!,
    index.commissionIrregular,
  );
  return avro.finish();
}

function startsAtCommission(body: Buffer, index: DeliveryIndex, path: number): boolean {
  const pair = 2 * index.pathOffsets[path]!;
  const start = index.pathKeys[pair]!;
  const end = index.pathKeys[pair + 1]!;
  if (end - start !== 10) return false;
  for (let k = 0; k < 10; k++) if (body[start + k] !== COMMISSION_KEY.charCodeAt(k)) return false;
  return true;
}

const COMMISSION_KEY = 'commission';
const INTEGER_TEXT = /^-?\d+$/;
