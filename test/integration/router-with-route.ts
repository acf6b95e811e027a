// The dedupe-router with routing a test chose (dedupeTopology's `route` option), on the harness's live
// group, state and topics: how tests emulate the router before a fix, or a router with a bug.
import { buildDeadLetter } from '../../processors/dedupe-router/dead-letter.js';
import { dedupeRouterAppId } from '../../processors/dedupe-router/main.js';
import { type RouteDecision, route } from '../../processors/dedupe-router/route.js';
import { dedupeTopology, ROUTER_OUTPUTS } from '../../processors/dedupe-router/topology.js';
import type { Logger } from '../../runtime/log.js';
import type { RunningStage } from '../../runtime/streams/stage.js';
import { type StreamApp, startStreamApp } from '../../runtime/streams/stream-runner.js';
import type { RawEnvelope } from '../../schemas/raw-envelope.js';
import { valueSubject } from '../../schemas/topics.js';
import { type ProcessorsHarness, quietLogger } from './processors-harness.js';

export type Routing = (envelope: RawEnvelope) => RouteDecision;

export async function startRouterWithRoute(
  harness: ProcessorsHarness,
  routing: Routing,
  {
    clientId,
    instanceId,
    logger = quietLogger(),
  }: { clientId: string; instanceId?: string; logger?: Logger },
): Promise<StreamApp> {
  const config = harness.config();
  const schemaIds = new Map<string, number>();
  for (const logical of ROUTER_OUTPUTS) {
    const topic = `${harness.prefix}${logical}`;
    schemaIds.set(topic, await harness.serde.latestSchemaId(valueSubject(topic)));
  }
  return startStreamApp({
    kafka: { brokers: config.KAFKA_BROKERS, clientId, logger: quietLogger() },
    topology: dedupeTopology({
      rawTopic: harness.names.raw,
      changelogTopic: harness.names.dedupeChangelog,
      topicOf: (logical) => `${harness.prefix}${logical}`,
      schemaIds,
      serde: harness.serde,
      windowMs: config.DEDUPE_WINDOW,
      route: routing,
    }),
    appId: dedupeRouterAppId(harness.prefix),
    instanceId: instanceId ?? config.HOOKLEDGER_INSTANCE_ID,
    logger,
    sessionTimeoutMs: config.PROCESSOR_SESSION_TIMEOUT_MS,
  });
}

/**
 * The router before a fix (or a routing change): the real routing, plus one rule that dead-letters
 * these webhook ids as record-invalid, giving `why` as the detail.
 */
export async function startRouterBeforeFix(
  harness: ProcessorsHarness,
  webhookIds: ReadonlySet<string>,
  { why, clientId }: { why: string; clientId: string },
): Promise<RunningStage> {
  const strict: Routing = (envelope) => {
    if (!webhookIds.has(envelope.webhookId)) return route(envelope);
    const value = buildDeadLetter(envelope, 'record-invalid', why, 'dedupe-router.route');
    return {
      kind: 'dead-lettered',
      reason: 'record-invalid',
      outputs: [
        { topic: 'webhooks.unique', key: envelope.webhookId, value: envelope },
        { topic: 'webhooks.dlq', key: envelope.webhookId, value },
      ],
    };
  };
  const app = await startRouterWithRoute(harness, strict, { clientId });
  return { name: 'dedupe-router', app, close: () => app.close() };
}
