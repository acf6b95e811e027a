// Routes one first delivery (docs/design.md, "Routing"): pure, so the same code decides live, in replay and
// in tests. The dedupe happens before; the caller writes the outputs, the changelog record (kind)
// and the input offset in one transaction.
import type { ZodError } from 'zod';
import { DEFAULT_INGEST_BODY_LIMIT } from '../../runtime/config.js';
import { MAX_WEBHOOK_ID_BYTES, type RawEnvelope } from '../../schemas/raw-envelope.js';
import { entityMaxMessageBytes } from '../../schemas/topics.js';
import {
  describeIssues,
  type EnergySwitchRecord,
  energySwitchSchema,
  operationFailureSchema,
  querySchema,
  recordSchema,
} from './contract.js';
import { buildDeadLetter, type DeadLetter, type DlqReason, type DlqStage } from './dead-letter.js';
import {
  buildCommissionEvent,
  buildEnergySwitchEvent,
  buildEntityEvent,
  type Delivery,
  type EnergySwitchCommissionEvent,
  type EnergySwitchEvent,
  type EntityEvent,
  resolveEntityId,
  variablesId,
} from './entity-event.js';
import { buildFailure, type WebhookFailure } from './failure.js';
import { fieldPathsExceed } from './field-paths.js';
import { parseInstant } from './instant.js';
import { describeJson, isJsonObject, type JsonObject, type JsonValue, parseBody } from './parse-body.js';
import { deletionTrigger, type EntityTopic, parseTrigger, type Trigger, triggerOfType } from './trigger.js';

/** Logical topic names (without TOPIC_PREFIX). */
export type RouteTopic =
  | EntityTopic
  | 'entity.energy-switch-commission'
  | 'webhooks.failures'
  | 'webhooks.dlq'
  | 'webhooks.unique';

export type RouteOutput =
  | { readonly topic: 'webhooks.unique'; readonly key: string; readonly value: RawEnvelope }
  | {
      readonly topic: Exclude<EntityTopic, 'entity.energy-switch'>;
      readonly key: string;
      readonly value: EntityEvent;
    }
  | { readonly topic: 'entity.energy-switch'; readonly key: string; readonly value: EnergySwitchEvent }
  | {
      readonly topic: 'entity.energy-switch-commission';
      readonly key: string;
      readonly value: EnergySwitchCommissionEvent;
    }
  | { readonly topic: 'webhooks.failures'; readonly key: string; readonly value: WebhookFailure }
  | { readonly topic: 'webhooks.dlq'; readonly key: string; readonly value: DeadLetter };

/** What the changelog records for the id, so a reprocessed or redriven record is recognised. */
export type DecisionKind = 'routed' | 'failure' | 'dead-lettered';

export interface RouteDecision {
  readonly kind: DecisionKind;
  /** `webhooks.unique` first, then the routed outputs. */
  readonly outputs: readonly RouteOutput[];
  /** Set when kind is `dead-lettered`. */
  readonly reason: DlqReason | null;
}

/** The key of an entity stream record: `<source>/<id>`, and `<source>/<Entity>/<id>` in entity.other. */
export function entityKey(source: string, trigger: Trigger, entityId: string): string {
  return trigger.topic === 'entity.other'
    ? `${source}/${trigger.entity}/${entityId}`
    : `${source}/${entityId}`;
}

class Reject {
  constructor(
    readonly reason: DlqReason,
    readonly message: string,
    readonly stage: DlqStage = 'dedupe-router.route',
  ) {}
}

/** What routing may be told; live, replay and tests pass the same settings so they decide alike. */
export interface RouteSettings {
  /**
   * Minutes east of UTC at which a `webhook.date` without a zone is read (WEBHOOK_DATE_ZONE); unset,
   * such a date is dead-lettered `webhook-date-invalid`. Only `webhook.date`: a record's own dates
   * (an energy switch's `commission.statusDate`) still need their zone.
   */
  readonly webhookDateOffsetMinutes?: number | undefined;
  /**
   * WEBHOOK_MAX_AGE: a delivery received longer than this after its `webhook.date` is dead-lettered
   * `too-old` (the contract signs no timestamp, so this is what bounds a replay). Unset: no limit.
   */
  readonly maxAgeMs?: number | undefined;
  /** WEBHOOK_MAX_AHEAD: a `webhook.date` this far after `receivedAt` is dead-lettered `from-the-future`. */
  readonly maxAheadMs?: number | undefined;
  /**
   * The entity topics' max.message.bytes as hookledger sizes them (entityMaxMessageBytes of
   * INGEST_BODY_LIMIT): a record whose fields' dotted paths alone total more is dead-lettered
   * `output-too-large` without building them. Unset: as for INGEST_BODY_LIMIT's default.
   */
  readonly maxEntityEventBytes?: number | undefined;
}

const DEFAULT_MAX_ENTITY_EVENT_BYTES = entityMaxMessageBytes(DEFAULT_INGEST_BODY_LIMIT);

/** What a record's field paths may total (RouteSettings.maxEntityEventBytes, or its default). */
export function maxFieldPathBytes(settings: RouteSettings): number {
  return settings.maxEntityEventBytes ?? DEFAULT_MAX_ENTITY_EVENT_BYTES;
}

/** What the caller knows of a record beyond its envelope. */
export interface RouteContext {
  /**
   * An operator sent it again (`hookledger redrive`) knowing it genuine: its age is not held against
   * it. Every other check still applies.
   */
  readonly operatorApproved?: boolean;
}

/** Decides where a first delivery goes. Never throws for any envelope content. */
export function route(
  envelope: RawEnvelope,
  settings: RouteSettings = {},
  context: RouteContext = {},
): RouteDecision {
  const unique: RouteOutput = { topic: 'webhooks.unique', key: envelope.webhookId, value: envelope };
  const result = decide(envelope, settings, context.operatorApproved === true);
  if (result instanceof Reject) {
    const value = buildDeadLetter(envelope, result.reason, result.message, result.stage);
    return {
      kind: 'dead-lettered',
      outputs: [unique, { topic: 'webhooks.dlq', key: envelope.webhookId, value }],
      reason: result.reason,
    };
  }
  return { kind: result.kind, outputs: [unique, ...result.outputs], reason: null };
}

function decide(
  envelope: RawEnvelope,
  settings: RouteSettings,
  operatorApproved: boolean,
): Reject | { kind: DecisionKind; outputs: RouteOutput[] } {
  const parsed = parseBody(envelope.body);
  if (!parsed.ok) return new Reject(parsed.reason, parsed.message, 'dedupe-router.parse');
  const body = parsed.value;

  const delivery = readDelivery(envelope, body, settings.webhookDateOffsetMinutes);
  if (delivery instanceof Reject) return delivery;
  if (!operatorApproved) {
    const late = checkAge(envelope.receivedAt, delivery.occurredAt, settings);
    if (late) return late;
  }
  const { trigger, variables } = delivery;

  const errors = body.errors;
  if (errors !== undefined && errors !== null && !(Array.isArray(errors) && errors.length === 0)) {
    return new Reject('graphql-errors', `the body has GraphQL errors: ${graphqlMessages(errors)}`);
  }

  const data = body.data;
  if (data === undefined || data === null) return new Reject('data-missing', `data is ${describeJson(data)}`);
  if (!isJsonObject(data)) return new Reject('data-not-object', `data is ${describeJson(data)}`);
  // `__typename` and other introspection fields at the top are not the configured query's answer.
  const rootFields = Object.keys(data).filter((name) => !name.startsWith('__'));
  if (rootFields.length === 0) return new Reject('root-field-missing', 'data has no root field');
  if (rootFields.length > 1) {
    return new Reject(
      'root-field-ambiguous',
      `data has ${rootFields.length} root fields: ${rootFields.join(', ')}`,
    );
  }
  const rootField = rootFields[0]!;
  const root = data[rootField];

  if (root === null) {
    // For a deletion, "no such entity" is the expected answer, whichever form it takes; the trigger's own
    // reading of what was deleted, as no record names it (trigger.ts deletionTrigger).
    const deleted = deletionTrigger(trigger);
    if (deleted !== undefined) return deletion(withTrigger(delivery, deleted), null);
    return new Reject('root-field-null', `data.${rootField} is null`);
  }
  if (!isJsonObject(root)) {
    return new Reject('root-field-not-object', `data.${rootField} is ${describeJson(root)}`);
  }
  const typename = root.__typename;
  if (typeof typename !== 'string' || typename === '') {
    return new Reject('typename-missing', `data.${rootField}.__typename is ${describeJson(typename)}`);
  }

  if (typename === 'OperationFailure') {
    const failure = operationFailureSchema.safeParse(root);
    if (!failure.success) {
      return new Reject('record-invalid', `data.${rootField}: ${describeIssues(failure.error)}`);
    }
    const deleted = deletionTrigger(trigger);
    if (deleted !== undefined) return deletion(withTrigger(delivery, deleted), root);
    const id = variablesId(variables);
    if (id === undefined) {
      return new Reject('entity-id-missing', 'an OperationFailure without query.variables.id to key it by');
    }
    const value = buildFailure(delivery, id, rootField, failure.data, root);
    return {
      kind: 'failure',
      outputs: [{ topic: 'webhooks.failures', key: `${envelope.source}/${id}`, value }],
    };
  }

  return record(withTrigger(delivery, triggerOfType(trigger, typename)), rootField, root, settings);
}

/**
 * A record whose fields' dotted paths alone (an entity event's `fields`) are more than its topic takes:
 * dead-lettered before they are built, as the event would be once built. Checked after everything the
 * record could be refused for sooner, so the reason stays the one it would have been.
 */
function fieldsOverLimit(rootField: string, root: JsonObject, settings: RouteSettings): Reject | undefined {
  const limit = maxFieldPathBytes(settings);
  if (!fieldPathsExceed(root, limit)) return undefined;
  return new Reject(
    'output-too-large',
    `data.${rootField}: the dotted paths of its fields total more than ${limit} bytes, more than an entity event may hold (its topics are sized for INGEST_BODY_LIMIT)`,
  );
}

/** The delivery read as another trigger's (the same object when it is the same). */
function withTrigger(delivery: Delivery, trigger: Trigger): Delivery {
  return trigger === delivery.trigger ? delivery : { ...delivery, trigger };
}

/** The checks on `webhook` and `query` that every route needs. */
function readDelivery(
  envelope: RawEnvelope,
  body: JsonObject,
  webhookDateOffsetMinutes: number | undefined,
): Reject | Delivery {
  const webhook = body.webhook;
  if (!isJsonObject(webhook)) return new Reject('webhook-id-missing', `webhook is ${describeJson(webhook)}`);

  const id = webhook.id;
  if (typeof id !== 'string' || id === '') {
    return new Reject('webhook-id-missing', `webhook.id is ${describeJson(id)}`);
  }
  if (id !== envelope.webhookId) {
    const bytes = Buffer.byteLength(id, 'utf8');
    return new Reject(
      'webhook-id-mismatch',
      bytes > MAX_WEBHOOK_ID_BYTES
        ? `webhook.id is ${bytes} bytes long, over the ${MAX_WEBHOOK_ID_BYTES} ingest keys a record by: the raw record's id is the body's digest, ${envelope.webhookId}`
        : `webhook.id is ${id} but the raw record's id is ${envelope.webhookId}`,
    );
  }

  const name = webhook.trigger;
  if (name === undefined || name === null || name === '') {
    return new Reject('trigger-missing', `webhook.trigger is ${describeJson(name)}`);
  }
  const trigger = typeof name === 'string' ? parseTrigger(name) : undefined;
  if (trigger === undefined) {
    return new Reject(
      'trigger-unrecognized',
      typeof name === 'string'
        ? `webhook.trigger ${JSON.stringify(name)} does not name an entity and an action`
        : `webhook.trigger is ${describeJson(name)}`,
    );
  }

  const date = webhook.date;
  if (date === undefined || date === null || date === '') {
    return new Reject('webhook-date-missing', `webhook.date is ${describeJson(date)}`);
  }
  const occurredAt = typeof date === 'string' ? parseInstant(date, webhookDateOffsetMinutes) : undefined;
  if (occurredAt === undefined) {
    // Said so the operator finds the setting: a platform that sends local times is a real case.
    const expected =
      webhookDateOffsetMinutes === undefined
        ? 'expected an ISO 8601 date-time with a zone (WEBHOOK_DATE_ZONE reads one without in a given zone)'
        : 'expected an ISO 8601 date-time';
    return new Reject(
      'webhook-date-invalid',
      `webhook.date ${typeof date === 'string' ? JSON.stringify(date) : `is ${describeJson(date)}`}: ${expected}`,
    );
  }

  let variables: JsonObject | null = null;
  let queryApi: string | null = null;
  if (body.query !== undefined && body.query !== null) {
    const query = querySchema.safeParse(body.query);
    if (!query.success) return new Reject('query-invalid', `query: ${describeIssues(query.error)}`);
    const raw = (body.query as JsonObject).variables;
    variables = isJsonObject(raw) ? raw : null;
    queryApi = query.data.api ?? null;
  }
  return { envelope, trigger, occurredAt, variables, queryApi };
}

/** Whether `webhook.date` is within the replay bounds of the time ingest received the delivery. */
function checkAge(receivedAt: number, occurredAt: number, settings: RouteSettings): Reject | undefined {
  const { maxAgeMs, maxAheadMs } = settings;
  const age = receivedAt - occurredAt;
  if (maxAgeMs !== undefined && age > maxAgeMs) {
    return new Reject(
      'too-old',
      `received ${hours(age)} after webhook.date ${new Date(occurredAt).toISOString()}: over WEBHOOK_MAX_AGE (${hours(maxAgeMs)}); redrive it if it is genuine`,
    );
  }
  if (maxAheadMs !== undefined && -age > maxAheadMs) {
    return new Reject(
      'from-the-future',
      `webhook.date ${new Date(occurredAt).toISOString()} is ${Math.round(-age / 1000)} s after it was received: over WEBHOOK_MAX_AHEAD (${Math.round(maxAheadMs / 1000)} s); redrive it if it is genuine`,
    );
  }
  return undefined;
}

function hours(ms: number): string {
  return `${(ms / 3_600_000).toFixed(1)} h`;
}

function deletion(
  delivery: Delivery,
  root: JsonObject | null,
): Reject | { kind: DecisionKind; outputs: RouteOutput[] } {
  const id = variablesId(delivery.variables);
  if (id === undefined) {
    return new Reject('entity-id-missing', 'a deletion without query.variables.id to key it by');
  }
  return { kind: 'routed', outputs: entityOutputs(delivery, id, root, false, null) };
}

function record(
  delivery: Delivery,
  rootField: string,
  root: JsonObject,
  settings: RouteSettings,
): Reject | { kind: DecisionKind; outputs: RouteOutput[] } {
  let energySwitch: EnergySwitchRecord | null = null;
  if (delivery.trigger.topic === 'entity.energy-switch') {
    const checked = energySwitchSchema.safeParse(root);
    if (!checked.success) return invalidRecord(rootField, checked.error);
    energySwitch = checked.data;
  } else {
    const checked = recordSchema.safeParse(root);
    if (!checked.success) return invalidRecord(rootField, checked.error);
  }
  const id = resolveEntityId(root, delivery.variables);
  if (id === undefined) {
    return new Reject('entity-id-missing', `data.${rootField} has no id, nor has query.variables`);
  }
  const tooLarge = fieldsOverLimit(rootField, root, settings);
  if (tooLarge) return tooLarge;
  return { kind: 'routed', outputs: entityOutputs(delivery, id, root, true, energySwitch) };
}

function invalidRecord(rootField: string, error: ZodError): Reject {
  return new Reject('record-invalid', `data.${rootField}: ${describeIssues(error)}`);
}

/**
 * The entity event and, for an EnergySwitch, its typed event and commission event. `isRecord`
 * is false for a deletion answered by an OperationFailure (or null): that carries no entity fields.
 */
function entityOutputs(
  delivery: Delivery,
  entityId: string,
  root: JsonObject | null,
  isRecord: boolean,
  energySwitch: EnergySwitchRecord | null,
): RouteOutput[] {
  const { envelope, trigger } = delivery;
  const key = entityKey(envelope.source, trigger, entityId);
  const event = buildEntityEvent(delivery, entityId, root, isRecord);
  if (trigger.topic !== 'entity.energy-switch') return [{ topic: trigger.topic, key, value: event }];
  const outputs: RouteOutput[] = [
    {
      topic: 'entity.energy-switch',
      key,
      value: buildEnergySwitchEvent(event, energySwitch, delivery.queryApi ?? null),
    },
  ];
  const commission = energySwitch && root ? buildCommissionEvent(event, energySwitch, root) : undefined;
  if (commission) outputs.push({ topic: 'entity.energy-switch-commission', key, value: commission });
  return outputs;
}

/** The first few error messages, each cut short: a DLQ message is for people, not a copy. */
function graphqlMessages(errors: JsonValue): string {
  if (!Array.isArray(errors)) return `errors is ${describeJson(errors)}`;
  const messages = errors
    .slice(0, 3)
    .map((e) =>
      isJsonObject(e) && typeof e.message === 'string' ? e.message.slice(0, 200) : describeJson(e),
    );
  return messages.join('; ') + (errors.length > 3 ? ` (and ${errors.length - 3} more)` : '');
}
