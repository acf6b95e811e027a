// Holds STYLE.md's layering: ingest → runtime, schemas; processors → runtime, schemas; tools → anything.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');

/** Top-level folders each folder must never import from. */
const FORBIDDEN: Record<string, string[]> = {
  runtime: ['ingest', 'processors', 'tools', 'schemas'],
  schemas: ['ingest', 'processors', 'tools'],
  ingest: ['processors', 'tools'],
  processors: ['ingest', 'tools'],
};

function sourcesUnder(dir: string): string[] {
  const entries = readdirSync(path.join(root, dir), { withFileTypes: true, recursive: true });
  return entries
    .filter((e) => e.isFile() && /\.ts$/.test(e.name))
    .map((e) => path.relative(root, path.join(e.parentPath, e.name)));
}

function importsOf(file: string): string[] {
  const text = readFileSync(path.join(root, file), 'utf8');
  const specifiers = [...text.matchAll(/(?:from|import)\s*\(?\s*['"]([^'"]+)['"]/g)].map((m) => m[1]!);
  return specifiers
    .filter((s) => s.startsWith('.'))
    .map((s) => path.relative(root, path.resolve(path.dirname(path.join(root, file)), s)));
}

describe('dependencies point one way', () => {
  for (const [layer, forbidden] of Object.entries(FORBIDDEN)) {
    it(`${layer}/ imports nothing from ${forbidden.join(', ')}`, () => {
      const violations = sourcesUnder(layer).flatMap((file) =>
        importsOf(file)
          .filter((target) => forbidden.includes(target.split(path.sep)[0]!))
          .map((target) => `${file} → ${target}`),
      );
      expect(violations).toEqual([]);
    });
  }
});
