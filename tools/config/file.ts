// The optional configuration file (`--config file.yaml` or HOOKLEDGER_CONFIG_FILE): the variables'
// own names as YAML keys, for teams who keep configuration in Git. The environment overrides it.
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { ConfigError } from '../../runtime/config.js';

/** What a file sets, as the environment would carry it: every value a string. */
export type FileVariables = Record<string, string>;

/**
 * Reads the file. Scalars become their text; HOOKLEDGER_SOURCES may be a mapping (written as the JSON it
 * stands for). Anything else (a list, a nested mapping, YAML that does not parse) is a ConfigError
 * naming the file and the key.
 */
export function readConfigFile(
  path: string,
  read: (path: string) => string = (p) => readFileSync(p, 'utf8'),
): FileVariables {
  const where = `--config ${path}`;
  let text: string;
  try {
    text = read(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new ConfigError(`${where}: cannot read it (${code})`);
  }
  let document: unknown;
  try {
    document = parse(text);
  } catch (error) {
    throw new ConfigError(`${where}: not valid YAML (${(error as Error).message.split('\n')[0]})`);
  }
  if (document === null || document === undefined) return {};
  if (typeof document !== 'object' || Array.isArray(document))
    throw new ConfigError(`${where}: expected a mapping of variable names to values`);
  const variables: FileVariables = {};
  for (const [name, value] of Object.entries(document as Record<string, unknown>)) {
    if (value === null || value === undefined) continue;
    if (typeof value === 'string') variables[name] = value;
    else if (typeof value === 'number' || typeof value === 'boolean') variables[name] = String(value);
    else if (name === 'HOOKLEDGER_SOURCES' && typeof value === 'object' && !Array.isArray(value))
      variables[name] = JSON.stringify(value);
    else throw new ConfigError(`${where}: ${name}: expected a single value (text, a number or true/false)`);
  }
  return variables;
}

/** The environment a command runs with: the file's variables under the environment's. */
export function withConfigFile(env: NodeJS.ProcessEnv, file: FileVariables): NodeJS.ProcessEnv {
  const merged: NodeJS.ProcessEnv = { ...file };
  for (const [name, value] of Object.entries(env))
    if (value !== undefined && value !== '') merged[name] = value;
  return merged;
}

/**
 * Takes `--config <file>` (or `--config=<file>`) out of the arguments, wherever it stands before a `--`.
 * Returns the remaining arguments and the file, if given.
 */
export function takeConfigOption(args: readonly string[]): { args: string[]; file?: string } {
  const rest: string[] = [];
  let file: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--') {
      rest.push(...args.slice(i));
      break;
    }
    if (arg === '--config') {
      const value = args[i + 1];
      if (value === undefined || value.startsWith('-'))
        throw new ConfigError('--config: expected a file, e.g. --config hookledger.yaml');
      file = value;
      i++;
    } else if (arg.startsWith('--config=')) file = arg.slice('--config='.length);
    else rest.push(arg);
  }
  return file === undefined ? { args: rest } : { args: rest, file };
}
