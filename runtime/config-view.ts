// The effective configuration as people may see it (the start-up log line, `hookledger config print`):
// every variable with its value after defaults, secrets replaced, durations in the one duration syntax.
import { CONFIG_VARIABLES, type Config, DURATION_VARIABLES, withoutPassword } from './config.js';
import { formatDuration } from './duration.js';
import { renamedVariableLines, unknownVariableLine, unknownVariables } from './known-variables.js';
import type { Logger } from './log.js';
import { riskySettings } from './risky-settings.js';
import { SECRET_VARIABLES } from './secret-files.js';
import { VERSION } from './version.js';

export const REDACTED = '[redacted]';

function shown(name: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if ((SECRET_VARIABLES as readonly string[]).includes(name)) return REDACTED;
  if (DURATION_VARIABLES.includes(name) && typeof value === 'number') return formatDuration(value);
  if (name === 'WEBHOOK_DATE_ZONE' && typeof value === 'number') {
    if (value === 0) return 'UTC';
    const sign = value < 0 ? '-' : '+';
    const minutes = Math.abs(value);
    return `${sign}${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`;
  }
  if (Array.isArray(value)) return value.join(',');
  if (value instanceof Set) return [...value].join(',');
  return withoutPassword(String(value));
}

/** Every variable hookledger reads (schema order), its effective value as text; unset optional ones left out. */
export function effectiveConfig(config: Config): Record<string, string> {
  const view: Record<string, string> = {};
  for (const name of CONFIG_VARIABLES) {
    const value = shown(name, (config as Record<string, unknown>)[name]);
    if (value !== undefined) view[name] = value;
  }
  return view;
}

/**
 * What a service logs as it starts: its version and effective configuration (secrets redacted), and a
 * warning per variable with a hookledger prefix that nothing reads (a misspelling), and per old name
 * still read (RENAMED_VARIABLES).
 */
export function logStartConfig(logger: Logger, config: Config, env: NodeJS.ProcessEnv): void {
  logger.info({ version: VERSION, config: effectiveConfig(config) }, 'configuration');
  for (const unknown of unknownVariables(Object.keys(env))) logger.warn(unknownVariableLine(unknown));
  for (const line of renamedVariableLines(env)) logger.warn(line);
  for (const line of riskySettings(config)) logger.warn(line);
}
