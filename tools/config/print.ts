// `hookledger config print`: the effective configuration, each variable with where its value came from;
// secrets (and sources' keys) redacted.
import { loadSources, sourcesSettings } from '../../ingest/sources.js';
import type { Config } from '../../runtime/config.js';
import { effectiveConfig, REDACTED } from '../../runtime/config-view.js';
import { SECRET_VARIABLES } from '../../runtime/secret-files.js';
import type { FileVariables } from './file.js';

export type Origin = 'environment' | 'file' | 'local stack' | 'default';

export interface PrintedVariable {
  name: string;
  value: string;
  from: Origin;
}

export interface PrintSources {
  /** The environment as the user set it (before the file and the local stack). */
  env: NodeJS.ProcessEnv;
  file: FileVariables;
  /** Variables a running local stack provided. */
  stack: Record<string, string>;
}

function originOf(name: string, { env, file, stack }: PrintSources): Origin {
  const set = (vars: Record<string, string | undefined>) =>
    (vars[name] !== undefined && vars[name] !== '') ||
    ((SECRET_VARIABLES as readonly string[]).includes(name) &&
      vars[`${name}_FILE`] !== undefined &&
      vars[`${name}_FILE`] !== '');
  if (set(env)) return 'environment';
  if (set(file)) return 'file';
  if (set(stack)) return 'local stack';
  return 'default';
}

/** Ingest's sources as JSON with every key replaced: names, signature policy and key ids stay. */
function redactedSources(env: NodeJS.ProcessEnv): string | undefined {
  const { inline, file } = sourcesSettings(env);
  if (!inline && !file) return undefined;
  const sources = loadSources(env);
  const shown: Record<string, unknown> = {};
  for (const source of sources.values()) {
    shown[source.name] =
      source.signature === 'none'
        ? { signature: 'none' }
        : { keys: Object.fromEntries([...source.keys.keys()].map((id) => [id, REDACTED])) };
  }
  return JSON.stringify(shown);
}

/** Every variable in effect, in the order runtime/config.ts declares them, then the sources. */
export function printableConfig(
  config: Config,
  merged: NodeJS.ProcessEnv,
  from: PrintSources,
): PrintedVariable[] {
  const printed = Object.entries(effectiveConfig(config)).map(([name, value]) => ({
    name,
    value,
    from: originOf(name, from),
  }));
  const sources = redactedSources(merged);
  if (sources !== undefined) {
    const { inline, file } = sourcesSettings(merged);
    const name = (inline ?? file)!.variable;
    printed.push({ name: 'HOOKLEDGER_SOURCES', value: sources, from: originOf(name, from) });
  }
  return printed;
}

/** Comments line up at most this far in: one long value (a GraphQL query) does not push every other one out. */
const MAX_ALIGN = 72;

/** `NAME=value` lines, a shell-style comment saying where each came from. */
export function printText(printed: readonly PrintedVariable[]): string {
  const width = Math.min(MAX_ALIGN, Math.max(...printed.map((p) => p.name.length + p.value.length + 1)));
  return printed.map((p) => `${`${p.name}=${p.value}`.padEnd(width)}  # ${p.from}`).join('\n');
}
