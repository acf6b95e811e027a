// Policies on the raw topic: production durability (for `topics`) and the body limit (for ingest at start).
import { type TopicAdmin, topicStates } from '../runtime/kafka/admin.js';
import type { PlannedTopic } from '../runtime/kafka/ensure-topics.js';
import type { TopicState } from '../runtime/kafka/topic-spec.js';
import { envelopeMaxMessageBytes } from './topics.js';

/** The raw topic would not keep what ingest acknowledges: refused in production. */
export class DurabilityError extends Error {
  override name = 'DurabilityError';
}

/** The raw topic is missing or cannot take a body of the configured limit. */
export class RawTopicError extends Error {
  override name = 'RawTopicError';
}

/**
 * Why a raw topic in this state is not durable enough for production (promise 1: a 200 means
 * durable); empty when it is. Checked against the state as found or as it is about to be created.
 */
export function rawDurabilityProblems(state: TopicState): string[] {
  const problems: string[] = [];
  const config = (name: string) => state.configs[name];
  if (state.replicationFactor < 3)
    problems.push(`replication factor ${state.replicationFactor} (needs at least 3)`);
  const minIsr = Number(config('min.insync.replicas') ?? '1');
  if (!(minIsr >= 2))
    problems.push(`min.insync.replicas ${config('min.insync.replicas') ?? '1'} (needs at least 2)`);
  const unclean = config('unclean.leader.election.enable');
  if (unclean?.toLowerCase() !== 'false') {
    problems.push(`unclean.leader.election.enable ${unclean ?? '(unknown)'} (needs false)`);
  }
  for (const setting of ['retention.ms', 'retention.bytes']) {
    if (config(setting) !== '-1')
      problems.push(`${setting} ${config(setting) ?? '(unknown)'} (needs -1: kept forever)`);
  }
  return problems;
}

export interface RawDurabilityCheckOptions {
  rawTopic: string;
  /** A local stack: problems are warned about instead of refused. */
  local: boolean;
  warn: (message: string) => void;
}

/**
 * An `ensureTopics` check: refuses (DurabilityError, nothing created) a raw topic that is not durable
 * enough, unless the stack is local, where it warns instead.
 */
export function rawDurabilityCheck({ rawTopic, local, warn }: RawDurabilityCheckOptions) {
  return (planned: readonly PlannedTopic[]): void => {
    const raw = planned.find((p) => p.spec.name === rawTopic);
    if (!raw) return;
    const problems = rawDurabilityProblems(raw.state);
    if (problems.length === 0) return;
    const what = `topic "${rawTopic}" ${raw.action === 'create' ? 'would be created with' : 'has'} ${problems.join(', ')}`;
    if (local) {
      warn(`${what}: acceptable for a local stack only`);
      return;
    }
    throw new DurabilityError(
      `${what}, so an acknowledged webhook could be lost; fix the cluster or topic, or pass --local (HOOKLEDGER_LOCAL_STACK=true) if this is a local stack`,
    );
  };
}

/**
 * For ingest at start: the raw topic exists and its `max.message.bytes` takes a body of `bodyLimit`
 * bytes plus the envelope. Throws a RawTopicError with one line saying what to do otherwise.
 */
export async function assertRawTopicFitsBodyLimit(
  admin: TopicAdmin,
  { rawTopic, bodyLimit }: { rawTopic: string; bodyLimit: number },
): Promise<void> {
  const state = (await topicStates(admin, [rawTopic])).get(rawTopic);
  if (!state) throw new RawTopicError(`topic "${rawTopic}" does not exist: run \`hookledger topics\` first`);
  const needed = envelopeMaxMessageBytes(bodyLimit);
  const found = Number(state.configs['max.message.bytes']);
  if (!(found >= needed)) {
    throw new RawTopicError(
      `topic "${rawTopic}" has max.message.bytes ${state.configs['max.message.bytes'] ?? '(unknown)'}, but INGEST_BODY_LIMIT ${bodyLimit} plus the envelope needs at least ${needed}: raise the topic's max.message.bytes or lower INGEST_BODY_LIMIT`,
    );
  }
}
