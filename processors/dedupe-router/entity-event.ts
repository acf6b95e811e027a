// Builds the values of the entity streams (docs/design.md, "Entity events"): the generic entity event, the
// EnergySwitch event with the contract's typed fields, and the commission event.

import type { RawEnvelope } from '../../schemas/raw-envelope.js';
import type { CommissionRecord, EnergySwitchRecord } from './contract.js';
import { fieldPaths } from './field-paths.js';
import { parseInstant } from './instant.js';
import {
  isLosslessNumber,
  type JsonObject,
  type JsonValue,
  type LosslessNumber,
  toJsonText,
} from './parse-body.js';
import type { Trigger } from './trigger.js';

/** What the router knows about a delivery once its body passed the envelope checks. */
export interface Delivery {
  readonly envelope: RawEnvelope;
  readonly trigger: Trigger;
  /** webhook.date, parsed. */
  readonly occurredAt: number;
  /** query.variables, when the body has them. */
  readonly variables: JsonObject | null;
  /** query.api, when the body has it: where the enrich stage may fetch the full record. */
  readonly queryApi?: string | null;
}

/** The value of `entity.user`, `entity.account`, `entity.document`, `entity.todo`, `entity.other`. */
export interface EntityEvent {
  webhookId: string;
  source: string;
  ingestId: string;
  trigger: string;
  /** `User`, `EnergySwitch`, `Payment`, …: `entity.other` mixes entities. */
  entity: string;
  action: string;
  /** A `*Deleted` trigger: the entity is gone (tables write a tombstone). */
  deleted: boolean;
  /** webhook.date, epoch ms. */
  occurredAt: number;
  receivedAt: number;
  entityId: string;
  /** query.variables as JSON text (numbers as sent), null when the body has none. */
  queryVariables: string | null;
  /** Dotted paths of the leaves the delivery carried (`commission.status`); never `__typename`. */
  fields: string[];
  /** The root field's value (record, or OperationFailure for a deletion) as JSON text, losslessly. */
  data: string;
}

export interface Money {
  currency: string | null;
  /** The exact decimal text as sent, as a number or a string: `210.10`, never 210.1. */
  amount: string | null;
}

export interface Commission {
  fuelsWaitingForUpdate: number | null;
  fuelsWithSwitchTerminated: number | null;
  fuelsWithCommissionExpected: number | null;
  fuelsWithCommissionReceived: number | null;
  statusDate: string | null;
  status: string | null;
}

/** The value of `entity.energy-switch`: the generic event plus the typed fields of contract §2.2. */
export interface EnergySwitchEvent extends EntityEvent {
  date: string | null;
  user: { id: string | null; tenantId: string | null } | null;
  userSwitchReferenceId: string | null;
  postcode: string | null;
  provider: { code: string | null; name: string | null } | null;
  tariffName: string | null;
  projectedSpend: Money | null;
  savings: Money | null;
  fuelType: string | null;
  fuelsSwitched: number | null;
  commission: Commission | null;
  /** query.api of the delivery, null when it had none. */
  queryApi: string | null;
  /** `delivery`, or `fetched` for the enrich stage's answer (processors/enrich). */
  origin: EventOrigin;
}

/** Where an energy-switch event came from: a webhook, or the enrich stage's fetch of the full record. */
export type EventOrigin = 'delivery' | 'fetched';

/** The value of `entity.energy-switch-commission`: one per delivery that carries `commission`. */
export interface EnergySwitchCommissionEvent extends Commission {
  webhookId: string;
  source: string;
  ingestId: string;
  trigger: string;
  action: string;
  occurredAt: number;
  receivedAt: number;
  /** The EnergySwitch's id (the key's entity id). */
  energySwitchId: string;
  /** user.id of the switch, when the delivery carried it. */
  userId: string | null;
  /** statusDate, parsed. */
  statusAt: number | null;
  /** The commission leaves carried, as in the entity event (`commission.status`, …). */
  fields: string[];
  /** The commission object as JSON text. */
  data: string;
}

/**
 * The entity id (docs/design.md): the record's `id`, else `query.variables.id`, else the variables' single
 * value. Numbers count, as their text; undefined when none of these gives one.
 */
export function resolveEntityId(record: JsonObject | null, variables: JsonObject | null): string | undefined {
  return idText(record?.id) ?? variablesId(variables);
}

/** `query.variables.id`, else the variables' single value (the key of failures and deletions). */
export function variablesId(variables: JsonObject | null): string | undefined {
  if (variables === null) return undefined;
  const byName = idText(variables.id);
  if (byName !== undefined) return byName;
  const values = Object.values(variables);
  return values.length === 1 ? idText(values[0]) : undefined;
}

function idText(value: JsonValue | undefined): string | undefined {
  if (typeof value === 'string' && value !== '') return value;
  if (isLosslessNumber(value)) return value.value;
  return undefined;
}

/**
 * The entity event of a delivery. `root` is the root field's value: the record, or for a deletion
 * the OperationFailure (or null) that answered; only a record's leaves count as carried fields.
 */
export function buildEntityEvent(
  delivery: Delivery,
  entityId: string,
  root: JsonObject | null,
  isRecord: boolean,
): EntityEvent {
  const { envelope, trigger } = delivery;
  return {
    webhookId: envelope.webhookId,
    source: envelope.source,
    ingestId: envelope.ingestId,
    trigger: trigger.trigger,
    entity: trigger.entity,
    action: trigger.action,
    deleted: trigger.deletes,
    occurredAt: delivery.occurredAt,
    receivedAt: envelope.receivedAt,
    entityId,
    queryVariables: delivery.variables === null ? null : toJsonText(delivery.variables),
    fields: isRecord && root !== null ? fieldPaths(root) : [],
    data: toJsonText(root),
  };
}

/** The EnergySwitch event: `record` is the validated record, or null for a deletion. */
export function buildEnergySwitchEvent(
  event: EntityEvent,
  record: EnergySwitchRecord | null,
  queryApi: string | null = null,
  origin: EventOrigin = 'delivery',
): EnergySwitchEvent {
  const r = record ?? ({} as Partial<EnergySwitchRecord>);
  // Field by field, not `...event`: the spread of a 13-field object showed in the router's profile.
  return {
    webhookId: event.webhookId,
    source: event.source,
    ingestId: event.ingestId,
    trigger: event.trigger,
    entity: event.entity,
    action: event.action,
    deleted: event.deleted,
    occurredAt: event.occurredAt,
    receivedAt: event.receivedAt,
    entityId: event.entityId,
    queryVariables: event.queryVariables,
    fields: event.fields,
    data: event.data,
    date: r.date ?? null,
    user: r.user ? { id: r.user.id ?? null, tenantId: textOf(r.user.tenantId) } : null,
    userSwitchReferenceId: r.userSwitchReferenceId ?? null,
    postcode: r.postcode ?? null,
    provider: r.provider ? { code: r.provider.code ?? null, name: r.provider.name ?? null } : null,
    tariffName: r.tariffName ?? null,
    projectedSpend: money(r.projectedSpend),
    savings: money(r.savings),
    fuelType: r.fuelType ?? null,
    fuelsSwitched: integer(r.fuelsSwitched),
    commission: r.commission ? commission(r.commission) : null,
    queryApi,
    origin,
  };
}

/**
 * The commission event, when the record carries a `commission` object. A `commission: null`
 * answer carries no commission facts, so it gives no commission event (the entity event has it).
 */
export function buildCommissionEvent(
  event: EntityEvent,
  record: EnergySwitchRecord,
  raw: JsonObject,
): EnergySwitchCommissionEvent | undefined {
  const rawCommission = raw.commission;
  if (!record.commission || rawCommission === undefined || rawCommission === null) return undefined;
  const typed = commission(record.commission);
  return {
    webhookId: event.webhookId,
    source: event.source,
    ingestId: event.ingestId,
    trigger: event.trigger,
    action: event.action,
    occurredAt: event.occurredAt,
    receivedAt: event.receivedAt,
    energySwitchId: event.entityId,
    userId: record.user?.id ?? null,
    ...typed,
    statusAt: typed.statusDate === null ? null : (parseInstant(typed.statusDate) ?? null),
    fields: event.fields.filter((path) => path === 'commission' || path.startsWith('commission.')),
    data: toJsonText(rawCommission),
  };
}

function commission(c: CommissionRecord): Commission {
  return {
    fuelsWaitingForUpdate: integer(c.fuelsWaitingForUpdate),
    fuelsWithSwitchTerminated: integer(c.fuelsWithSwitchTerminated),
    fuelsWithCommissionExpected: integer(c.fuelsWithCommissionExpected),
    fuelsWithCommissionReceived: integer(c.fuelsWithCommissionReceived),
    statusDate: c.statusDate ?? null,
    status: c.status ?? null,
  };
}

/** A string, or a number's exact text as sent. */
function textOf(value: string | LosslessNumber | null | undefined): string | null {
  if (value === null || value === undefined) return null;
  return typeof value === 'string' ? value : value.value;
}

// The contract schema read the amount as its decimal text, whether sent as a number or a string.
function money(m: { currency?: string | null; amount?: string | null } | null | undefined): Money | null {
  return m ? { currency: m.currency ?? null, amount: m.amount ?? null } : null;
}

// The contract schema read the integer (2, 2.0, "2") and checked that an Avro long holds it.
function integer(n: number | null | undefined): number | null {
  return n ?? null;
}
