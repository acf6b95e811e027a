// Every environment variable name hookledger reads, services and tools alike, so that a misspelled one
// (HOOKLEDGER_SOURCS) is warned about instead of silently ignored.
import { CONFIG_VARIABLES } from './config.js';
import { SECRET_VARIABLES } from './secret-files.js';

/**
 * Read outside runtime/config.ts: ingest's sources, the local stack, simulate, the configuration file,
 * the bin (HOOKLEDGER_COMPILED; HOOKLEDGER_MALLOC, read by tools/cli/hookledger), the integration tests
 * (HOOKLEDGER_KEEP_TEST_STACK).
 */
const OTHER_VARIABLES = [
  'HOOKLEDGER_COMPILED',
  'HOOKLEDGER_MALLOC',
  'HOOKLEDGER_KEEP_TEST_STACK',
  'HOOKLEDGER_SOURCES',
  'HOOKLEDGER_SOURCES_FILE',
  'HOOKLEDGER_CONFIG_FILE',
  'HOOKLEDGER_STACK',
  'HOOKLEDGER_KAFKA_VERSION',
  'HOOKLEDGER_STATE_DIR',
  'HOOKLEDGER_CACHE_DIR',
  'HOOKLEDGER_SIMULATE_KEY',
];

/**
 * Old names still read: the project was called hookstream (renamed in commit 71220c9), and setups
 * written then still set these. They are read together or not at all: only while no new name is set,
 * so a leftover old name never mixes with a new one.
 */
export const RENAMED_VARIABLES: Readonly<Record<string, string>> = {
  HOOKSTREAM_SOURCES: 'HOOKLEDGER_SOURCES',
  HOOKSTREAM_SOURCES_FILE: 'HOOKLEDGER_SOURCES_FILE',
};

/** The new names set (empty counts as unset): while there is one, the old names are ignored. */
function newNamesSet(env: NodeJS.ProcessEnv): string[] {
  return Object.values(RENAMED_VARIABLES).filter((name) => env[name]);
}

/** `name`'s value, or its old name's while no new name is set, and which variable it came from. */
export function renamedVariable(
  env: NodeJS.ProcessEnv,
  name: string,
): { variable: string; value: string } | undefined {
  if (env[name]) return { variable: name, value: env[name] };
  if (newNamesSet(env).length > 0) return undefined;
  for (const [old, current] of Object.entries(RENAMED_VARIABLES))
    if (current === name && env[old]) return { variable: old, value: env[old] };
  return undefined;
}

/** One warning per old name set: rename it, or remove it when a new name is set (the new one wins). */
export function renamedVariableLines(env: NodeJS.ProcessEnv): string[] {
  const set = newNamesSet(env);
  return Object.entries(RENAMED_VARIABLES)
    .filter(([old]) => env[old])
    .map(([old, current]) =>
      set.length > 0
        ? `${old} is the old name of ${current}: ignored (${set.join(' and ')} set), remove it`
        : `${old} is the old name of ${current}: read as ${current} for now, rename it`,
    );
}

export const KNOWN_VARIABLES: ReadonlySet<string> = new Set([
  ...CONFIG_VARIABLES,
  ...SECRET_VARIABLES.map((name) => `${name}_FILE`),
  ...OTHER_VARIABLES,
]);

/** A variable with one of these prefixes is meant for hookledger. */
export const VARIABLE_PREFIXES = [
  'HOOKLEDGER_',
  'KAFKA_',
  'SCHEMA_REGISTRY_',
  'TOPIC_',
  'INGEST_',
  'PROCESSOR_',
  'DEDUPE_',
  'QUARANTINE_',
  'WEBHOOK_',
  'ENRICH',
] as const;

/** What Kubernetes sets for a Service in the namespace (a Service named `kafka`: KAFKA_PORT, …). */
const KUBERNETES_SERVICE =
  /_(SERVICE_HOST|SERVICE_PORT(_[A-Z0-9_]+)?|PORT(_\d+_(TCP|UDP|SCTP)(_(ADDR|PORT|PROTO))?)?)$/;

function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
      diagonal = above;
    }
  }
  return row[b.length]!;
}

export interface UnknownVariable {
  variable: string;
  /** The known name it is closest to, when it looks like a misspelling of it. */
  suggestion?: string;
}

/** Variables with a hookledger prefix that hookledger does not read, each with the likely intended name. */
export function unknownVariables(names: Iterable<string>): UnknownVariable[] {
  const unknown: UnknownVariable[] = [];
  for (const variable of names) {
    if (KNOWN_VARIABLES.has(variable)) continue;
    if (!VARIABLE_PREFIXES.some((prefix) => variable.startsWith(prefix))) continue;
    if (KUBERNETES_SERVICE.test(variable)) continue;
    let suggestion: string | undefined;
    let best = 4;
    for (const known of KNOWN_VARIABLES) {
      const d = distance(variable, known);
      if (d < best) {
        best = d;
        suggestion = known;
      }
    }
    unknown.push(suggestion === undefined ? { variable } : { variable, suggestion });
  }
  return unknown.sort((a, b) => a.variable.localeCompare(b.variable));
}

/** `HOOKLEDGER_SOURCS is not a hookledger variable (did you mean HOOKLEDGER_SOURCES?)` */
export function unknownVariableLine({ variable, suggestion }: UnknownVariable): string {
  return `${variable} is not a hookledger variable${suggestion ? ` (did you mean ${suggestion}?)` : ''}: ignored`;
}
