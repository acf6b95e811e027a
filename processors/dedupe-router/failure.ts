// Builds the value of `webhooks.failures`: an OperationFailure answer to a trigger that is not a
// deletion (the query could not produce its record).
import type { OperationFailureRecord } from './contract.js';
import type { Delivery } from './entity-event.js';
import { type JsonObject, toJsonText } from './parse-body.js';

export interface WebhookFailure {
  webhookId: string;
  source: string;
  ingestId: string;
  trigger: string;
  entity: string;
  action: string;
  occurredAt: number;
  receivedAt: number;
  /** query.variables.id (else the variables' single value): the id the query was asked about. */
  entityId: string;
  /** The root field that answered, e.g. `getEnergySwitch`. */
  rootField: string;
  /** The failure's description in the requested locale, when selected. */
  description: string | null;
  queryVariables: string | null;
  /** The OperationFailure object as JSON text. */
  data: string;
}

export function buildFailure(
  delivery: Delivery,
  entityId: string,
  rootField: string,
  failure: OperationFailureRecord,
  raw: JsonObject,
): WebhookFailure {
  const { envelope, trigger } = delivery;
  return {
    webhookId: envelope.webhookId,
    source: envelope.source,
    ingestId: envelope.ingestId,
    trigger: trigger.trigger,
    entity: trigger.entity,
    action: trigger.action,
    occurredAt: delivery.occurredAt,
    receivedAt: envelope.receivedAt,
    entityId,
    rootField,
    description: failure.description ?? null,
    queryVariables: delivery.variables === null ? null : toJsonText(delivery.variables),
    data: toJsonText(raw),
  };
}
