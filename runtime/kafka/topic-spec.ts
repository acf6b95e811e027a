// What a topic should look like and how a found topic compares with it: pure, no client, no topic names.

/**
 * An expected topic setting: an exact value (numbers compared as numbers, comma lists such as
 * `cleanup.policy` as sets), or a bound. A topic is created with the exact value or the bound itself.
 */
export type ConfigExpectation = string | { atLeast: number } | { atMost: number };

export interface TopicSpec {
  name: string;
  /** Set at creation and never changed afterwards: a different count on an existing topic is a conflict. */
  partitions: number;
  /** The least replication factor accepted; topics are created with exactly this. */
  replicationFactor: number;
  configs: Readonly<Record<string, ConfigExpectation>>;
}

/** A topic as found on the cluster (or as it will be once created from its spec). */
export interface TopicState {
  name: string;
  partitions: number;
  /** The smallest replica count over the topic's partitions. */
  replicationFactor: number;
  /** Effective values, broker defaults included. */
  configs: Readonly<Record<string, string>>;
}

/** One setting of one topic that differs from what is expected. */
export interface TopicConflict {
  topic: string;
  setting: string;
  found: string;
  expected: string;
}

/** Settings where -1 means "no limit", which satisfies any "at least". */
const UNLIMITED_WHEN_MINUS_ONE = new Set(['retention.ms', 'retention.bytes']);

/** The value a topic is created with for this expectation. */
export function creationValue(expectation: ConfigExpectation): string {
  if (typeof expectation === 'string') return expectation;
  return 'atLeast' in expectation ? String(expectation.atLeast) : String(expectation.atMost);
}

/** The expectation as a person reads it: "-1", "at least 1114112", "at most 21600000". */
export function describeExpectation(expectation: ConfigExpectation): string {
  if (typeof expectation === 'string') return expectation;
  return 'atLeast' in expectation ? `at least ${expectation.atLeast}` : `at most ${expectation.atMost}`;
}

/** Whether a found value meets the expectation for this setting. */
export function satisfies(
  setting: string,
  found: string | undefined,
  expectation: ConfigExpectation,
): boolean {
  if (found === undefined) return false;
  if (typeof expectation === 'string') return sameValue(found, expectation);
  const value = Number(found);
  if (!Number.isFinite(value)) return false;
  if ('atMost' in expectation) return value <= expectation.atMost;
  if (value === -1 && UNLIMITED_WHEN_MINUS_ONE.has(setting)) return true;
  return value >= expectation.atLeast;
}

function sameValue(found: string, expected: string): boolean {
  const a = found.trim();
  const b = expected.trim();
  if (a.includes(',') || b.includes(',')) return sameSet(a, b);
  if (a !== '' && b !== '' && Number.isFinite(Number(a)) && Number.isFinite(Number(b))) {
    return Number(a) === Number(b);
  }
  return a.toLowerCase() === b.toLowerCase();
}

function sameSet(a: string, b: string): boolean {
  const items = (text: string) =>
    [
      ...new Set(
        text
          .split(',')
          .map((s) => s.trim().toLowerCase())
          .filter(Boolean),
      ),
    ].sort();
  return items(a).join(',') === items(b).join(',');
}

/** Every way an existing topic differs from its spec; empty when it fits. */
export function compareTopic(spec: TopicSpec, state: TopicState): TopicConflict[] {
  const conflicts: TopicConflict[] = [];
  if (state.partitions !== spec.partitions) {
    conflicts.push({
      topic: spec.name,
      setting: 'partitions',
      found: String(state.partitions),
      expected: String(spec.partitions),
    });
  }
  if (state.replicationFactor < spec.replicationFactor) {
    conflicts.push({
      topic: spec.name,
      setting: 'replication factor',
      found: String(state.replicationFactor),
      expected: `at least ${spec.replicationFactor}`,
    });
  }
  for (const [setting, expectation] of Object.entries(spec.configs)) {
    const found = state.configs[setting];
    if (!satisfies(setting, found, expectation)) {
      conflicts.push({
        topic: spec.name,
        setting,
        found: found ?? '(not reported by the broker)',
        expected: describeExpectation(expectation),
      });
    }
  }
  return conflicts;
}

/** The state a topic created from this spec starts with (settings the spec leaves out are not known). */
export function stateFromSpec(spec: TopicSpec): TopicState {
  return {
    name: spec.name,
    partitions: spec.partitions,
    replicationFactor: spec.replicationFactor,
    configs: Object.fromEntries(Object.entries(spec.configs).map(([k, v]) => [k, creationValue(v)])),
  };
}

/** One line for any number of conflicts, each naming the topic, the setting, the found and the expected value. */
export function formatConflicts(conflicts: readonly TopicConflict[]): string {
  const items = conflicts.map(
    (c) => `topic "${c.topic}" setting "${c.setting}": found ${c.found}, expected ${c.expected}`,
  );
  const head =
    conflicts.length === 1
      ? 'an existing topic conflicts with its expected configuration'
      : `${conflicts.length} settings of existing topics conflict with their expected configuration`;
  const fixed = conflicts.some((c) => c.setting === 'partitions')
    ? ' (a partition count is fixed once: added partitions would send a retried webhook id to a store that never saw it; to scale out, copy webhooks.raw into a new topic set with more partitions and replay it there: hookledger repartition, docs/scaling.md)'
    : '';
  return `${head}: ${items.join('; ')}${fixed}`;
}
