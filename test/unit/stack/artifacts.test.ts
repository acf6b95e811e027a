import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cacheRoot, findRegistryJar, parseJavaMajor } from '../../../tools/stack/artifacts.js';

describe('the artifact cache', () => {
  it('lives in HOOKLEDGER_CACHE_DIR, else XDG_CACHE_HOME, else ~/.cache: never in the checkout', () => {
    expect(cacheRoot({ HOOKLEDGER_CACHE_DIR: '/c' })).toBe('/c');
    expect(cacheRoot({ XDG_CACHE_HOME: '/x' })).toBe('/x/hookledger');
    expect(cacheRoot({})).toBe(join(homedir(), '.cache', 'hookledger'));
  });
});

describe('java -version', () => {
  it('reads the major version of modern and pre-9 JVMs', () => {
    expect(parseJavaMajor('openjdk version "17.0.15" 2025-04-15')).toBe(17);
    expect(parseJavaMajor('openjdk version "25" 2025-09-16')).toBe(25);
    expect(parseJavaMajor('java version "1.8.0_392"')).toBe(8);
    expect(parseJavaMajor('nothing useful')).toBeUndefined();
  });
});

describe("finding Apicurio's runnable jar", () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  const layout = (files: string[]) => {
    dir = mkdtempSync(join(tmpdir(), 'hookledger-jar-'));
    for (const file of files) {
      mkdirSync(join(dir, file, '..'), { recursive: true });
      writeFileSync(join(dir, file), '');
    }
    return dir;
  };

  it('finds the 3.0.x runner jar at the top', () => {
    expect(findRegistryJar(layout(['apicurio-registry-app-3.0.9-runner.jar', 'lib/a.jar']))).toBe(
      'apicurio-registry-app-3.0.9-runner.jar',
    );
  });

  it('finds a Quarkus fast-jar at the top or one folder down', () => {
    expect(findRegistryJar(layout(['quarkus-run.jar']))).toBe('quarkus-run.jar');
    rmSync(dir!, { recursive: true });
    expect(findRegistryJar(layout(['apicurio-registry-app-3.3.3/quarkus-run.jar']))).toBe(
      join('apicurio-registry-app-3.3.3', 'quarkus-run.jar'),
    );
  });

  it('says so when there is none', () => {
    expect(findRegistryJar(layout(['README']))).toBeUndefined();
  });
});
