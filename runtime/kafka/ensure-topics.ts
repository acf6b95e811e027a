// Creates missing topics and verifies existing ones against their specs, idempotently; never alters a topic.
import type { Admin } from 'kafkajs';
import type { Logger } from '../log.js';
import { type RetryOptions, retry } from '../streams/retry.js';
import { describeTopics } from './admin.js';
import {
  compareTopic,
  creationValue,
  formatConflicts,
  stateFromSpec,
  type TopicConflict,
  type TopicSpec,
  type TopicState,
} from './topic-spec.js';

/** Existing topics whose configuration differs from their spec. The message is one line naming each. */
export class TopicConflictError extends Error {
  override name = 'TopicConflictError';
  constructor(
    readonly conflicts: readonly TopicConflict[],
    context: string,
  ) {
    super(`${formatConflicts(conflicts)} (${context})`);
  }
}

/** Topics that are still missing, or have a partition without a leader, after creating them. */
export class TopicsNotReadyError extends Error {
  override name = 'TopicsNotReadyError';
  constructor(readonly topics: readonly string[]) {
    super(`topics without a leader for every partition after creating them: ${topics.join(', ')}`);
  }
}

/** A topic as ensureTopics is about to handle it: found on the cluster, or to be created from its spec. */
export interface PlannedTopic {
  spec: TopicSpec;
  action: 'create' | 'verify';
  /** What was found, or what the topic will be once created. */
  state: TopicState;
}

export interface TopicOutcome {
  name: string;
  action: 'created' | 'verified' | 'would create';
  partitions: number;
  replicationFactor: number;
}

export interface EnsureTopicsResult {
  topics: TopicOutcome[];
  /** False when every topic already existed as specified: the run changed nothing. */
  changed: boolean;
}

export interface EnsureTopicsOptions {
  /** Inspect and compare only; report what would be created. */
  dryRun?: boolean;
  /**
   * Called with every topic after the comparison and before anything is created, so a caller can
   * add its own policy (e.g. durability of one topic); throwing refuses the whole run.
   */
  check?: (planned: readonly PlannedTopic[]) => void | Promise<void>;
  logger?: Logger;
  /** How often, and how long apart, creation is checked again while the cluster's metadata catches up. */
  creationRetry?: Pick<RetryOptions, 'retries' | 'initialDelayMs' | 'maxDelayMs' | 'sleep'>;
}

/**
 * Makes every spec'd topic exist as specified. Existing topics are compared, never altered: any
 * conflict (a different partition count included) stops the run before anything is created, with
 * one TopicConflictError naming every conflicting setting. Missing topics are created and waited for
 * until every partition has a leader, looking again (and retrying) while the metadata lags behind.
 */
export async function ensureTopics(
  admin: Admin,
  specs: readonly TopicSpec[],
  { dryRun = false, check, logger, creationRetry }: EnsureTopicsOptions = {},
): Promise<EnsureTopicsResult> {
  const names = specs.map((spec) => spec.name);
  if (new Set(names).size !== names.length) throw new Error(`duplicate topic names in ${names.join(', ')}`);

  const found = await describeTopics(admin, names);
  const planned: PlannedTopic[] = specs.map((spec) => {
    const state = found.get(spec.name);
    return state ? { spec, action: 'verify', state } : { spec, action: 'create', state: stateFromSpec(spec) };
  });
  const conflicts = planned
    .filter((p) => p.action === 'verify')
    .flatMap((p) => compareTopic(p.spec, p.state));
  if (conflicts.length > 0) throw new TopicConflictError(conflicts, 'nothing was created or changed');
  await check?.(planned);

  const missing = planned.filter((p) => p.action === 'create').map((p) => p.spec);
  if (missing.length > 0 && !dryRun) {
    logger?.info({ topics: missing.map((s) => s.name) }, 'creating topics');
    await createWithLeaders(admin, missing, { logger, ...creationRetry });
    // Someone may have created one of them concurrently with other settings: verify what is there now.
    const created = await describeTopics(
      admin,
      missing.map((spec) => spec.name),
    );
    const late = missing.flatMap((spec) => {
      const state = created.get(spec.name);
      if (!state) {
        return [
          { topic: spec.name, setting: 'existence', found: 'missing after creation', expected: 'created' },
        ];
      }
      return compareTopic(spec, state);
    });
    if (late.length > 0) throw new TopicConflictError(late, 'found right after creating the missing topics');
  }

  const topics = planned.map(({ spec, action, state }) => ({
    name: spec.name,
    action: action === 'verify' ? 'verified' : dryRun ? 'would create' : 'created',
    partitions: state.partitions,
    replicationFactor: action === 'verify' ? state.replicationFactor : spec.replicationFactor,
  })) satisfies TopicOutcome[];
  return { topics, changed: missing.length > 0 && !dryRun };
}

/** kafkajs error types that mean the cluster's metadata has not caught up with new topics yet. */
const METADATA_LAG = new Set([
  'UNKNOWN_TOPIC_OR_PARTITION',
  'LEADER_NOT_AVAILABLE',
  'NOT_LEADER_FOR_PARTITION',
]);

/**
 * Whether an error met while creating topics only says that the cluster is still catching up with
 * them: kafkajs's createTopics (waitForLeaders) gives up on UNKNOWN_TOPIC_OR_PARTITION and times out
 * on LEADER_NOT_AVAILABLE when many partitions are new at once, and its own retries wrap the cause.
 */
export function isMetadataLag(error: unknown): boolean {
  let current = error;
  for (let depth = 0; depth < 5 && typeof current === 'object' && current !== null; depth++) {
    if (current instanceof TopicsNotReadyError) return true;
    const { type, name, message, cause } = current as {
      type?: unknown;
      name?: unknown;
      message?: unknown;
      cause?: unknown;
    };
    if (typeof type === 'string' && METADATA_LAG.has(type)) return true;
    if (name === 'KafkaJSTimeout' && typeof message === 'string' && message.includes('topic leaders'))
      return true;
    current = cause;
  }
  return false;
}

/**
 * Creates the topics and returns once every one exists with a leader for each partition. After an
 * error that only says the metadata lags, it looks again and creates whatever is still absent (the
 * broker refuses to create a topic twice, so only the absent ones are asked for), with jittered
 * back-off, a few times.
 */
async function createWithLeaders(
  admin: Admin,
  specs: readonly TopicSpec[],
  { logger, ...options }: { logger?: Logger | undefined } & NonNullable<EnsureTopicsOptions['creationRetry']>,
): Promise<void> {
  await retry(
    async (attempt) => {
      const absent = attempt === 0 ? specs : await absentOf(admin, specs);
      // false means another process created them all first: the leader check covers that.
      if (absent.length > 0)
        await admin.createTopics({ waitForLeaders: true, topics: absent.map(creationRequest) });
      await expectLeaders(admin, specs);
    },
    {
      retries: 5,
      initialDelayMs: 250,
      maxDelayMs: 4_000,
      ...options,
      isRetriable: isMetadataLag,
      onRetry: (error, attempt, delayMs) =>
        logger?.info({ err: error, attempt, delayMs }, 'new topics not ready yet; checking again'),
    },
  );
}

function creationRequest(spec: TopicSpec) {
  return {
    topic: spec.name,
    numPartitions: spec.partitions,
    replicationFactor: spec.replicationFactor,
    configEntries: Object.entries(spec.configs).map(([name, expectation]) => ({
      name,
      value: creationValue(expectation),
    })),
  };
}

async function absentOf(admin: Admin, specs: readonly TopicSpec[]): Promise<TopicSpec[]> {
  const existing = new Set(await admin.listTopics());
  return specs.filter((spec) => !existing.has(spec.name));
}

/** Throws TopicsNotReadyError naming every topic that is absent or has a partition without a leader. */
async function expectLeaders(admin: Admin, specs: readonly TopicSpec[]): Promise<void> {
  const absent = new Set((await absentOf(admin, specs)).map((spec) => spec.name));
  const present = specs.map((spec) => spec.name).filter((name) => !absent.has(name));
  const { topics } =
    present.length > 0 ? await admin.fetchTopicMetadata({ topics: present }) : { topics: [] };
  const led = new Set(
    topics
      .filter((t) => t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0))
      .map((t) => t.name),
  );
  const notReady = specs.map((spec) => spec.name).filter((name) => !led.has(name));
  if (notReady.length > 0) throw new TopicsNotReadyError(notReady);
}
