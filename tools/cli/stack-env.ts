// Points a command at the local stack when KAFKA_BROKERS and SCHEMA_REGISTRY_URL are not set, as
// `stack status` and `start` find it: the stack running from the state dir, with the variables of its
// stack.env. Here, not in runtime/config.ts: the services know variables, never where a stack lives.
import { existsSync } from 'node:fs';
import { dirname, isAbsolute, join, relative } from 'node:path';
import { sourcesSettings } from '../../ingest/sources.js';
import { defaultStateDir, renderStackEnv, runningStack, type StackRecord } from '../stack/index.js';
import { CommandFailed } from './command.js';

export interface StackEnvOptions {
  cwd?: string;
  /** The stack running from a state dir, if any (runningStack: its record and live pids). */
  findStack?: (stateDir: string) => StackRecord | undefined;
  /** Whether a file exists (tests). */
  exists?: (file: string) => boolean;
}

export interface ResolvedStackEnv {
  env: NodeJS.ProcessEnv;
  /** Which local stack the command uses, for people; undefined when the environment named one. */
  using?: string;
}

/** `.hookledger/stack` under the working directory, else the absolute path. */
function shown(stateDir: string, cwd: string): string {
  const path = relative(cwd, stateDir);
  return path && !path.startsWith('..') && !isAbsolute(path) ? path : stateDir;
}

/** The `NAME=value` lines of the stack's stack.env, as variables: what `export $(cat stack.env)` set. */
function stackVariables(record: StackRecord): Record<string, string> {
  const lines = renderStackEnv(record).split('\n').filter(Boolean);
  return Object.fromEntries(
    lines.map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  );
}

/**
 * The environment a command runs with. Either variable set means the user chose a stack: left as it is
 * (half a configuration gets loadConfig's one line naming the missing variable). Neither set: the stack
 * running from HOOKLEDGER_STATE_DIR or .hookledger/stack, else a CommandFailed saying how to get one.
 */
export function resolveStackEnv(
  env: NodeJS.ProcessEnv,
  { cwd = process.cwd(), findStack = runningStack, exists = existsSync }: StackEnvOptions = {},
): ResolvedStackEnv {
  if (env.KAFKA_BROKERS?.trim() || env.SCHEMA_REGISTRY_URL?.trim()) return { env };
  const stateDir = defaultStateDir(env, cwd);
  const record = findStack(stateDir);
  if (!record) {
    throw new CommandFailed(
      `KAFKA_BROKERS and SCHEMA_REGISTRY_URL are not set, and no local stack runs in ${shown(stateDir, cwd)}: start one with \`npx hookledger start\` or \`npx hookledger stack up\`, or set both variables`,
    );
  }
  const using = `using the local stack in ${shown(stateDir, cwd)} (Kafka ${record.brokers.join(',')}, registry ${record.registryUrl})`;
  const sources = developmentSources(env, stateDir, exists);
  return {
    env: { ...env, ...stackVariables(record), ...(sources ? { HOOKLEDGER_SOURCES_FILE: sources } : {}) },
    using: sources ? `${using} and its development sources in ${shown(sources, cwd)}` : using,
  };
}

/**
 * The sources file `start` made beside the stack (`.hookledger/sources.json`), when no sources are set:
 * `quarantine promote`, `ingest` and `process` then check the same keys as the ingest `start` runs.
 */
function developmentSources(
  env: NodeJS.ProcessEnv,
  stateDir: string,
  exists: (file: string) => boolean,
): string | undefined {
  const { inline, file } = sourcesSettings(env);
  if (inline || file) return undefined;
  const candidate = join(dirname(stateDir), 'sources.json');
  return exists(candidate) ? candidate : undefined;
}

/** resolveStackEnv for a command: says on stderr which local stack it uses (stdout stays the output). */
export function withLocalStack(
  env: NodeJS.ProcessEnv,
  note: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): NodeJS.ProcessEnv {
  const resolved = resolveStackEnv(env);
  if (resolved.using) note(`hookledger: ${resolved.using}`);
  return resolved.env;
}

/** The sentence each such command's --help ends with. */
export const STACK_ENV_HELP = [
  'Without KAFKA_BROKERS and SCHEMA_REGISTRY_URL, it uses the local stack running from $HOOKLEDGER_STATE_DIR',
  'or ./.hookledger/stack (`hookledger start` or `hookledger stack up`), and says so on stderr; with no',
  'HOOKLEDGER_SOURCES(_FILE) either, the sources `start` made beside it (./.hookledger/sources.json).',
].join('\n');
