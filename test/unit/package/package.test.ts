// `npm run build` gives dist/; the bin runs it where there are no sources (the npm package, the image);
// `npm pack` ships only what runs. Builds once (about 15 s on two busy cores).
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import manifest from '../../../package.json' with { type: 'json' };

const root = resolve(import.meta.dirname, '../../..');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const installed = mkdtempSync(join(tmpdir(), 'hookledger-package-test-'));
const env = {
  ...process.env,
  KAFKA_BROKERS: '127.0.0.1:9092',
  SCHEMA_REGISTRY_URL: 'http://127.0.0.1:8081',
  HOOKLEDGER_SOURCES: '{"s":{"signature":"none"}}',
  INGEST_UNSIGNED_SOURCES: 's',
};

beforeAll(() => {
  execFileSync(npm, ['run', 'build'], { cwd: root, stdio: 'pipe', timeout: 180_000 });
  // The package as npm installs it: the bin and dist, no sources, its dependencies beside it.
  mkdirSync(join(installed, 'tools', 'cli'), { recursive: true });
  for (const file of ['hookledger', 'hookledger.js'])
    cpSync(join(root, 'tools', 'cli', file), join(installed, 'tools', 'cli', file));
  cpSync(join(root, 'dist'), join(installed, 'dist'), { recursive: true });
  cpSync(join(root, 'package.json'), join(installed, 'package.json'));
  symlinkSync(join(root, 'node_modules'), join(installed, 'node_modules'), 'dir');
}, 200_000);

afterAll(() => rmSync(installed, { recursive: true, force: true }));

// Each case spawns node or npm: seconds on a busy machine, beyond vitest's default 5 s.
describe('the built package', { timeout: 60_000 }, () => {
  it('runs compiled where there are no sources: --version, help, config check', () => {
    const bin = join(installed, 'tools', 'cli', 'hookledger.js');
    const version = spawnSync(process.execPath, [bin, '--version'], {
      encoding: 'utf8',
      env,
      timeout: 30_000,
    });
    expect(version.stdout.trim()).toBe(manifest.version);
    const check = spawnSync(process.execPath, [bin, 'config', 'check', '--json'], {
      encoding: 'utf8',
      env,
      timeout: 30_000,
    });
    expect(check.status, check.stderr).toBe(0);
    expect(JSON.parse(check.stdout).ok).toBe(true);
    // The command npm links (package.json "bin"): the script that picks the allocator, then hookledger.js.
    const linked = spawnSync(join(installed, 'tools', 'cli', 'hookledger'), ['--version'], {
      encoding: 'utf8',
      env,
      timeout: 30_000,
    });
    expect(linked.stdout.trim(), linked.stderr).toBe(manifest.version);
    expect(manifest.bin.hookledger).toBe('tools/cli/hookledger');
  });

  it('runs the compiled files from a checkout when asked (HOOKLEDGER_COMPILED=1)', () => {
    const result = spawnSync(
      process.execPath,
      [join(root, 'tools', 'cli', 'hookledger.js'), 'help', 'tail'],
      {
        encoding: 'utf8',
        env: { ...env, HOOKLEDGER_COMPILED: '1' },
        timeout: 30_000,
      },
    );
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^usage: hookledger tail <stream>/);
  });

  it('packs only what runs: dist without tests, maps or benchmarks, the bin and its script, the postinstall and its patch, the licence files', () => {
    const out = execFileSync(npm, ['pack', '--dry-run', '--json', '--ignore-scripts'], {
      cwd: root,
      encoding: 'utf8',
      timeout: 60_000,
    });
    const files = (JSON.parse(out) as [{ files: { path: string }[] }])[0].files.map((f) => f.path);
    expect(files).toEqual(
      expect.arrayContaining([
        'package.json',
        'LICENSE',
        'NOTICE',
        'README.md',
        'CHANGELOG.md',
        'tools/cli/hookledger',
        'tools/cli/hookledger.js',
        'dist/package.json',
        'dist/tools/cli/main.js',
        'dist/ingest/main.js',
        'dist/processors/main.js',
        'dist/schemas/raw-envelope.avsc',
      ]),
    );
    const outsideDist = files.filter((f) => !f.startsWith('dist/'));
    expect(outsideDist.sort()).toEqual(
      [
        'CHANGELOG.md',
        'LICENSE',
        'NOTICE',
        'README.md',
        'SECURITY.md',
        'package.json',
        'tools/build/kafka-javascript-1.10.1.patch',
        'tools/build/patch-kafka-binding.mjs',
        'tools/cli/hookledger',
        'tools/cli/hookledger.js',
      ].sort(),
    );
    expect(files.filter((f) => /\.ts$|\.map$|^dist\/test\/|^dist\/tools\/bench\//.test(f))).toEqual([]);
  });

  it('imports at run time only what dependencies lists (dev tools such as tsx stay out of the image)', () => {
    const imported = new Set<string>();
    const files = (readdirSync(join(root, 'dist'), { recursive: true }) as string[]).filter((f) =>
      f.endsWith('.js'),
    );
    for (const file of files) {
      const text = readFileSync(join(root, 'dist', file), 'utf8');
      for (const m of text.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)['"]([^'"./][^'"]*)['"]/g)) {
        const specifier = m[1]!;
        if (specifier.startsWith('node:')) continue;
        const parts = specifier.split('/');
        imported.add(specifier.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!);
      }
    }
    expect(imported.size).toBeGreaterThan(5);
    // Optional dependencies install with the package (the CLI's Docker stack uses testcontainers) and
    // are pruned from the image, where no Docker stack is started.
    const runtime = [
      ...Object.keys(manifest.dependencies),
      ...Object.keys(manifest.optionalDependencies ?? {}),
    ];
    expect([...imported].filter((name) => !runtime.includes(name)).sort()).toEqual([]);
    expect(runtime).not.toContain('tsx');
  });
});
