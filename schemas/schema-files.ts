// Finds and reads the .avsc files, from the sources (schemas/) or from a build (dist/schemas/ beside them).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** Beside this module when run from the sources; the checkout's schemas/ when run from dist/schemas/. */
const CANDIDATE_DIRS = [new URL('./', import.meta.url), new URL('../../schemas/', import.meta.url)];

/** The directory holding the .avsc files. */
export function schemaDir(): string {
  for (const url of CANDIDATE_DIRS) {
    const dir = fileURLToPath(url);
    if (existsSync(dir) && readdirSync(dir).some((f) => f.endsWith('.avsc'))) return dir;
  }
  throw new Error(`no .avsc files found in ${CANDIDATE_DIRS.map((u) => fileURLToPath(u)).join(' or ')}`);
}

/** The names (without .avsc) of every schema file. */
export function schemaNames(): string[] {
  return readdirSync(schemaDir())
    .filter((f) => f.endsWith('.avsc'))
    .map((f) => f.slice(0, -'.avsc'.length))
    .sort();
}

/** The text of schemas/<name>.avsc, checked to be JSON. */
export function loadSchema(name: string): string {
  const text = readFileSync(`${schemaDir()}${name}.avsc`, 'utf8');
  JSON.parse(text);
  return text;
}
