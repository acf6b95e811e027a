// Creates missing topics and verifies existing ones against their specs, idempotently; never alters a topic.
import type { Logger } from '../log.js';
import { errorFields } from '../log-error.js';
import { type RetryOptions, retry } from '../streams/retry.js';
import { type NewTopic, type TopicAdmin, topicStates } from './admin.js';
import { ERRORS } from './rdkafka.js';
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
  admin: TopicAdmin,
  specs: readonly TopicSpec[],
  { dryRun = false, check, logger, creationRetry }: EnsureTopicsOptions = {},
): Promise<EnsureTopicsResult> {
  const names = specs.map((spec) => spec.name);
  if (new Set(names).size !== names.length) throw new Error(`duplicate topic names in ${names.join(', ')}`);

  const found = await topicStates(admin, names);
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
    // The broker asked for configs may not know a topic the metadata already shows: ask again then.
    // A broker whose metadata lags may also leave a topic out without any error: look again then too.
    const created = await retry(
      async () => {
        const names = missing.map((spec) => spec.name);
        const states = await topicStates(admin, names);
        const absent = names.filter((name) => !states.has(name));
        if (absent.length > 0) throw new TopicsNotReadyError(absent);
        return states;
      },
      // Patient: every broker must learn of the new topics, and a busy cluster takes tens of seconds.
      { retries: 10, initialDelayMs: 250, maxDelayMs: 5_000, ...creationRetry, isRetriable: isMetadataLag },
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

/**
 * Kafka error codes that mean the cluster has not caught up with new topics yet (librdkafka's positive
 * codes are the broker's).
 */
const METADATA_LAG = new Set<number>([
  ERRORS.ERR_UNKNOWN_TOPIC_OR_PART,
  ERRORS.ERR_LEADER_NOT_AVAILABLE,
  ERRORS.ERR_NOT_LEADER_FOR_PARTITION,
  // The controller did not finish within the operation timeout: the topic may or may not exist yet.
  ERRORS.ERR_REQUEST_TIMED_OUT,
  // librdkafka's own: its metadata does not know the topic yet, or its request timed out.
  ERRORS.ERR__UNKNOWN_TOPIC,
  ERRORS.ERR__TIMED_OUT,
]);

/**
 * Whether an error met while creating topics only says that the cluster is still catching up with
 * them: a topic or leader the broker asked does not know yet (many new partitions at once make this
 * likely), or a creation that did not finish within its timeout. The code may be on a cause.
 */
export function isMetadataLag(error: unknown): boolean {
  let current = error;
  for (let depth = 0; depth < 5 && typeof current === 'object' && current !== null; depth++) {
    if (current instanceof TopicsNotReadyError) return true;
    const { code, cause } = current as { code?: unknown; cause?: unknown };
    if (typeof code === 'number' && METADATA_LAG.has(code)) return true;
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
  admin: TopicAdmin,
  specs: readonly TopicSpec[],
  { logger, ...options }: { logger?: Logger | undefined } & NonNullable<EnsureTopicsOptions['creationRetry']>,
): Promise<void> {
  await retry(
    async (attempt) => {
      const absent = attempt === 0 ? specs : await absentOf(admin, specs);
      // Topics another process created first are not an error: the leader check covers them.
      if (absent.length > 0) await admin.createTopics(absent.map(newTopic));
      await expectLeaders(admin, specs);
    },
    {
      // Patient: a broker just started, or a busy one, takes tens of seconds to lead many new partitions.
      retries: 10,
      initialDelayMs: 250,
      maxDelayMs: 5_000,
      ...options,
      isRetriable: isMetadataLag,
      onRetry: (error, attempt, delayMs) =>
        logger?.info({ ...errorFields(error), attempt, delayMs }, 'new topics not ready yet; checking again'),
    },
  );
}

function newTopic(spec: TopicSpec): NewTopic {
  return {
    name: spec.name,
    partitions: spec.partitions,
    replicationFactor: spec.replicationFactor,
    configs: Object.fromEntries(
      Object.entries(spec.configs).map(([name, expectation]) => [name, creationValue(expectation)]),
    ),
  };
}

async function absentOf(admin: TopicAdmin, specs: readonly TopicSpec[]): Promise<TopicSpec[]> {
  const existing = new Set(await admin.listTopics());
  return specs.filter((spec) => !existing.has(spec.name));
}

/** Throws TopicsNotReadyError naming every topic that is absent or has a partition without a leader. */
async function expectLeaders(admin: TopicAdmin, specs: readonly TopicSpec[]): Promise<void> {
  const found = await admin.describeTopics(specs.map((spec) => spec.name));
  const led = new Set(
    found
      .filter((t) => t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0))
      .map((t) => t.name),
  );
  const notReady = specs.map((spec) => spec.name).filter((name) => !led.has(name));
  if (notReady.length > 0) throw new TopicsNotReadyError(notReady);
}
