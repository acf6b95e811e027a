// Creates missing topics and verifies existing ones against their specs, idempotently; never alters a topic.
import type { Admin } from 'kafkajs';
import type { Logger } from '../log.js';
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
}

/**
 * Makes every spec'd topic exist as specified. Existing topics are compared, never altered: any
 * conflict (a different partition count included) stops the run before anything is created, with
 * one TopicConflictError naming every conflicting setting.
 */
export async function ensureTopics(
  admin: Admin,
  specs: readonly TopicSpec[],
  { dryRun = false, check, logger }: EnsureTopicsOptions = {},
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
    // false means another process created them all first: the verification below covers that.
    await admin.createTopics({
      waitForLeaders: true,
      topics: missing.map((spec) => ({
        topic: spec.name,
        numPartitions: spec.partitions,
        replicationFactor: spec.replicationFactor,
        configEntries: Object.entries(spec.configs).map(([name, expectation]) => ({
          name,
          value: creationValue(expectation),
        })),
      })),
    });
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
