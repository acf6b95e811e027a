// Secrets mounted as files: `<NAME>_FILE` names a file whose content is the value of `<NAME>`. The one
// place that reads them, before the environment is validated, so a secret has one name whichever way it comes.
import { readFileSync } from 'node:fs';
import { ConfigError } from './config.js';

/** The variables that may hold a secret, each of which may also come as `<NAME>_FILE`. */
export const SECRET_VARIABLES = [
  'KAFKA_SASL_USERNAME',
  'KAFKA_SASL_PASSWORD',
  'KAFKA_SSL_KEY_PASSWORD',
  'KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET',
  'SCHEMA_REGISTRY_USERNAME',
  'SCHEMA_REGISTRY_PASSWORD',
  'SCHEMA_REGISTRY_BEARER_TOKEN',
  'ENRICH_CREDENTIALS',
] as const;

export type ReadText = (path: string) => string;

const readText: ReadText = (path) => readFileSync(path, 'utf8');

/**
 * The environment with every `<NAME>_FILE` of a secret variable replaced by `<NAME>` and the file's
 * content (one trailing newline dropped: `echo secret > file` must not change the secret). Setting both
 * `<NAME>` and `<NAME>_FILE` is refused: which one wins would be a guess.
 */
export function resolveSecretFiles(
  env: NodeJS.ProcessEnv,
  read: ReadText = readText,
  /** Given: each problem is handed to it and the others are still resolved (`config check`); else thrown. */
  onProblem: (error: ConfigError) => void = (error) => {
    throw error;
  },
): NodeJS.ProcessEnv {
  const resolved: NodeJS.ProcessEnv = { ...env };
  for (const name of SECRET_VARIABLES) {
    try {
      resolveOne(name, env, resolved, read);
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      onProblem(error);
    }
  }
  return resolved;
}

/** Resolves `<name>_FILE` into `resolved[name]`; throws a ConfigError naming the file variable. */
function resolveOne(name: string, env: NodeJS.ProcessEnv, resolved: NodeJS.ProcessEnv, read: ReadText): void {
  const fileVariable = `${name}_FILE`;
  const file = env[fileVariable];
  delete resolved[fileVariable];
  if (file === undefined || file === '') return;
  if (env[name] !== undefined && env[name] !== '')
    throw new ConfigError(`${fileVariable}: set either ${name} or ${fileVariable}, not both`);
  let text: string;
  try {
    text = read(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new ConfigError(`${fileVariable}: cannot read ${JSON.stringify(file)} (${code})`);
  }
  const value = text.replace(/\r?\n$/, '');
  if (value === '') throw new ConfigError(`${fileVariable}: ${JSON.stringify(file)} is empty`);
  resolved[name] = value;
}
