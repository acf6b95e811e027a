// An endpoint's answer to the full query, as what a Full delivery of it would have given: the answer
// is wrapped in a delivery body (webhook.date = the fetch time) and routed by the router's own code, so
// a fetched record is validated, typed and keyed exactly like a delivered one. Pure.

import type { RawEnvelope } from '../../schemas/raw-envelope.js';
import type { DeadLetter, DlqReason } from '../dedupe-router/dead-letter.js';
import { buildDeadLetter } from '../dedupe-router/dead-letter.js';
import type { EnergySwitchEvent } from '../dedupe-router/entity-event.js';
import type { WebhookFailure } from '../dedupe-router/failure.js';
import { parseBody, toJsonText } from '../dedupe-router/parse-body.js';
import { route } from '../dedupe-router/route.js';
import type { Answer } from './fetcher.js';

/** A fetched event's webhookId: the delivery's, marked, so the two never share an id downstream. */
export const FETCHED_SUFFIX = '#fetched';

/** What the delivery that asked for the fetch said (the fields of its entity event the mapping reads). */
export interface FetchRequest {
  readonly key: string;
  readonly event: Pick<EnergySwitchEvent, 'webhookId' | 'source' | 'ingestId' | 'trigger' | 'entityId'>;
  readonly api: string;
  readonly query: string;
  /** When the answer came, epoch ms: the fetched event's time. */
  readonly fetchedAt: number;
}

export type EnrichOutput =
  | { readonly topic: 'entity.energy-switch'; readonly key: string; readonly value: EnergySwitchEvent }
  | { readonly topic: 'webhooks.failures'; readonly key: string; readonly value: WebhookFailure }
  | { readonly topic: 'webhooks.dlq'; readonly key: string; readonly value: DeadLetter };

/**
 * The fetched answer as the stage's output. `maxEntityEventBytes` bounds the record's field paths as the
 * router's does (RouteSettings): the entity topics' size for INGEST_BODY_LIMIT.
 */
export function mapAnswer(request: FetchRequest, answer: Answer, maxEntityEventBytes?: number): EnrichOutput {
  const envelope = answerEnvelope(request, answer);
  const dead = (reason: DlqReason, message: string): EnrichOutput => ({
    topic: 'webhooks.dlq',
    key: envelope.webhookId,
    value: buildDeadLetter(envelope, reason, message, 'enrich.fetch'),
  });
  // Read no further than the limit: there is nothing to route, only the fact to report.
  if (answer.overLimitBytes !== undefined)
    return dead(
      'output-too-large',
      `${request.api} answered the full query (${answer.status}) with more than ${answer.overLimitBytes} bytes (INGEST_BODY_LIMIT); not read further`,
    );
  if (answer.status < 200 || answer.status > 299) {
    // A GraphQL server may answer a 400 with a GraphQL body: its errors, when it has some, are the better
    // reason. Without any (absent, null or []), a refusal is a refusal even if it carries a record.
    const parsed = parseBody(answer.body);
    const errors = parsed.ok ? parsed.value.errors : undefined;
    if (!Array.isArray(errors) || errors.length === 0)
      return dead('fetch-refused', `${request.api} answered ${answer.status} to the full query`);
  }
  const decision = route(envelope, { maxEntityEventBytes });
  for (const output of decision.outputs) {
    if (output.topic === 'entity.energy-switch') {
      if (output.key !== request.key)
        return dead('answer-mismatch', `asked for ${request.key}, answered about ${output.key}`);
      return { topic: output.topic, key: output.key, value: { ...output.value, origin: 'fetched' } };
    }
    if (output.topic === 'webhooks.failures')
      return { topic: output.topic, key: output.key, value: output.value };
    if (output.topic === 'webhooks.dlq')
      return { topic: output.topic, key: output.key, value: { ...output.value, stage: 'enrich.fetch' } };
  }
  return dead('root-field-missing', `the answer to ${request.api} routes nowhere`);
}

/** The answer as the platform would have delivered it: what the DLQ keeps and `redrive` could send again. */
export function answerEnvelope(request: FetchRequest, answer: Answer): RawEnvelope {
  const { event, api, query, fetchedAt } = request;
  const webhookId = `${event.webhookId}${FETCHED_SUFFIX}`;
  const date = new Date(fetchedAt).toISOString();
  const parsed = parseBody(answer.body);
  const parts = [
    `"webhook":${JSON.stringify({ id: webhookId, trigger: event.trigger, date })}`,
    `"query":${JSON.stringify({ api, query, variables: { id: event.entityId } })}`,
  ];
  if (parsed.ok) {
    // Lossless: money keeps its decimal text through the wrapping.
    if (parsed.value.data !== undefined) parts.push(`"data":${toJsonText(parsed.value.data)}`);
    if (parsed.value.errors !== undefined) parts.push(`"errors":${toJsonText(parsed.value.errors)}`);
  }
  const body = parsed.ok || answer.body.length === 0 ? Buffer.from(`{${parts.join(',')}}`) : answer.body;
  return {
    webhookId,
    source: event.source,
    trigger: event.trigger,
    webhookDate: date,
    receivedAt: fetchedAt,
    body,
    headers: { 'x-hookledger-fetched-status': String(answer.status) },
    query: null,
    verifiedKeyId: null,
    ingestId: event.ingestId,
  };
}
