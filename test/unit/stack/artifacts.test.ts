import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  cachedArtifacts,
  cacheEntry,
  cacheRoot,
  findRegistryJar,
  parseJavaMajor,
} from '../../../tools/stack/artifacts.js';
import { requireKafkaRelease } from '../../../tools/stack/kafka-versions.js';

describe('the artifact cache', () => {
  it('lives in HOOKLEDGER_CACHE_DIR, else XDG_CACHE_HOME, else ~/.cache: never in the checkout', () => {
    expect(cacheRoot({ HOOKLEDGER_CACHE_DIR: '/c' })).toBe('/c');
    expect(cacheRoot({ XDG_CACHE_HOME: '/x' })).toBe('/x/hookledger');
    expect(cacheRoot({})).toBe(join(homedir(), '.cache', 'hookledger'));
  });
});

describe('the cache entry of each Kafka version', () => {
  const v39 = requireKafkaRelease('3.9.1');
  const v41 = requireKafkaRelease('4.1.2');
  let root: string | undefined;
  afterEach(() => {
    if (root) rmSync(root, { recursive: true, force: true });
  });

  /** A completed fetch for `release`, as ensureArtifacts leaves it: jars, registry jar, marker last. */
  const fetched = (release: typeof v39) => {
    root ??= mkdtempSync(join(tmpdir(), 'hookledger-cache-'));
    const entry = cacheEntry(root, release);
    mkdirSync(join(entry, 'kafka-lib'), { recursive: true });
    mkdirSync(join(entry, 'registry'), { recursive: true });
    writeFileSync(join(entry, 'registry', 'app-runner.jar'), '');
    const marker = {
      kafkaLib: join(entry, 'kafka-lib'),
      registryJar: join(entry, 'registry', 'app-runner.jar'),
    };
    writeFileSync(join(entry, 'complete.json'), JSON.stringify(marker));
    return marker;
  };

  it('is named by the hash of its own POM, so versions never share jars', () => {
    expect(cacheEntry('/c', v39)).toMatch(/^\/c\/jvm-[0-9a-f]{12}$/);
    expect(cacheEntry('/c', v41)).not.toBe(cacheEntry('/c', v39));
    expect(cacheEntry('/c', v41)).toBe(cacheEntry('/c', requireKafkaRelease('4.1')));
  });

  it('is found for the version HOOKLEDGER_KAFKA_VERSION picks, and only for that one', () => {
    const marker = fetched(v41);
    const env = { HOOKLEDGER_CACHE_DIR: root! };
    expect(cachedArtifacts({ ...env, HOOKLEDGER_KAFKA_VERSION: '4.1.2' })).toEqual({ kafka: v41, ...marker });
    expect(cachedArtifacts(env)).toBeUndefined();
    expect(cachedArtifacts(env, v39)).toBeUndefined();
  });

  it('reads markers written before they named their version (3.9.1 caches)', () => {
    const marker = fetched(v39);
    expect(cachedArtifacts({ HOOKLEDGER_CACHE_DIR: root! })).toEqual({ kafka: v39, ...marker });
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
