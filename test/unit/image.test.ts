// What ships is what runs: the production image (Dockerfile) is built from pinned base images and
// carries the runtime dependencies only; nothing the services load comes from a dev or optional package.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');
const dockerfile = readFileSync(path.join(root, 'Dockerfile'), 'utf8');
const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  devDependencies: Record<string, string>;
};

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const file = path.join(dir, name);
    if (statSync(file).isDirectory()) return sources(file);
    return /\.(ts|js)$/.test(name) ? [file] : [];
  });
}

describe('the production image', () => {
  it('pins every base image by digest', () => {
    const args = Object.fromEntries(
      [...dockerfile.matchAll(/^ARG (\w+)=(\S+)$/gm)].map(([, name, value]) => [name, value]),
    );
    const bases = [...dockerfile.matchAll(/^FROM (\S+)/gm)].map(([, image]) =>
      image!.replace(/^\$\{(\w+)\}$/, (_, name: string) => args[name] ?? image!),
    );
    expect(bases.length).toBeGreaterThan(1);
    for (const image of bases) expect(image).toMatch(/@sha256:[0-9a-f]{64}$/);
  });

  it('runs every process on jemalloc, as the hookledger command does outside the image', () => {
    expect(dockerfile).toMatch(/apt-get install [^\n]*libjemalloc2/);
    expect(dockerfile).toMatch(
      /ln -s "\$\(find \/usr\/lib -name libjemalloc\.so\.2 \| head -n 1\)" \/usr\/local\/lib\/libjemalloc\.so\.2/,
    );
    expect(dockerfile).toMatch(/^ENV LD_PRELOAD=\/usr\/local\/lib\/libjemalloc\.so\.2$/m);
  });

  it('ships neither dev nor optional packages', () => {
    expect(dockerfile).toMatch(/npm prune --omit=dev --omit=optional/);
    for (const name of ['tsx', 'testcontainers', '@testcontainers/kafka'])
      expect(Object.keys(pkg.dependencies)).not.toContain(name);
  });

  it('runs services that import no dev or optional package', () => {
    const notShipped = [...Object.keys(pkg.devDependencies), ...Object.keys(pkg.optionalDependencies ?? {})];
    const files = ['ingest', 'processors', 'runtime', 'schemas'].flatMap((dir) =>
      sources(path.join(root, dir)),
    );
    for (const file of files) {
      const text = readFileSync(file, 'utf8');
      for (const name of notShipped) {
        // A type-only import is erased from the compiled JavaScript.
        const imported = new RegExp(`^import (?!type )[^;]*from '${name}(/[^']*)?';`, 'm');
        expect(imported.test(text), `${path.relative(root, file)} imports ${name}`).toBe(false);
      }
    }
  });
});
