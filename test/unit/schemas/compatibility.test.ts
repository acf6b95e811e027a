import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readIncompatibility } from '../../../schemas/compatibility.js';
import { loadSchema, schemaDir, schemaNames } from '../../../schemas/schema-files.js';

const git = (...args: string[]) => execFileSync('git', args, { cwd: schemaDir(), encoding: 'utf8' });
const repoRoot = git('rev-parse', '--show-toplevel').trim();

/** Every committed version of a schema file, newest first (a shallow clone only has the latest). */
function committedVersions(name: string): { commit: string; text: string }[] {
  const path = join(schemaDir(), `${name}.avsc`).slice(repoRoot.length + 1);
  return git('log', '--format=%H', '--', path)
    .split('\n')
    .filter(Boolean)
    .map((commit) => ({ commit, text: git('show', `${commit}:${path}`) }));
}

describe('schema compatibility (BACKWARD_TRANSITIVE, as the registry enforces it)', () => {
  it.each(schemaNames())(
    '%s.avsc as it is now reads data written with each of its committed versions',
    (name) => {
      const current = loadSchema(name);
      for (const { commit, text } of committedVersions(name)) {
        expect(
          readIncompatibility(current, text),
          `against ${name}.avsc at ${commit.slice(0, 10)}`,
        ).toBeUndefined();
      }
    },
  );

  const envelope = JSON.parse(readFileSync(join(schemaDir(), 'raw-envelope.avsc'), 'utf8'));
  const withField = (field: object) => JSON.stringify({ ...envelope, fields: [...envelope.fields, field] });

  it('catches a new field without a default', () => {
    const problem = readIncompatibility(
      withField({ name: 'tenant', type: 'string' }),
      JSON.stringify(envelope),
    );
    expect(problem).toMatch(/tenant/);
  });

  it('catches a changed field type', () => {
    const changed = {
      ...envelope,
      fields: envelope.fields.map((f: { name: string }) => (f.name === 'body' ? { ...f, type: 'int' } : f)),
    };
    expect(readIncompatibility(JSON.stringify(changed), JSON.stringify(envelope))).toBeDefined();
  });

  it('accepts a new nullable field with a default', () => {
    const added = withField({ name: 'tenant', type: ['null', 'string'], default: null });
    expect(readIncompatibility(added, JSON.stringify(envelope))).toBeUndefined();
  });

  it('accepts a removed field (the reader ignores it)', () => {
    const removed = {
      ...envelope,
      fields: envelope.fields.filter((f: { name: string }) => f.name !== 'query'),
    };
    expect(readIncompatibility(JSON.stringify(removed), JSON.stringify(envelope))).toBeUndefined();
  });
});
