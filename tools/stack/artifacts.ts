// The local stack's JVM artifacts: fetched once from Maven Central through Maven, then reused from a cache.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { accessSync, constants, existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';
import type { Logger } from '../../runtime/log.js';
import { StackError } from './errors.js';
import { type KafkaRelease, kafkaRelease } from './kafka-versions.js';

const run = promisify(execFile);

const MARKER = 'complete.json';
export const MIN_JAVA = 17;

export interface Artifacts {
  /** The Kafka version these jars are, and what differs about running it. */
  kafka: KafkaRelease;
  /** Kafka's jars (broker and CLI tools): the JVM's classpath is `<kafkaLib>/*`. */
  kafkaLib: string;
  /** Apicurio Registry's runnable jar (its lib/ folder beside it). */
  registryJar: string;
}

/** `$HOOKLEDGER_CACHE_DIR`, else `$XDG_CACHE_HOME/hookledger`, else `~/.cache/hookledger`: outside the checkout. */
export function cacheRoot(env: NodeJS.ProcessEnv = process.env): string {
  if (env.HOOKLEDGER_CACHE_DIR) return env.HOOKLEDGER_CACHE_DIR;
  return join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'hookledger');
}

/** Versions and how to fetch them live in the release's POM (one per Kafka version); its hash names the entry. */
export function cacheEntry(root: string, release: KafkaRelease): string {
  const digest = createHash('sha256').update(readFileSync(release.pom)).digest('hex').slice(0, 12);
  return join(root, `jvm-${digest}`);
}

/** What the marker file holds: paths, and the version for whoever reads the cache by hand. */
interface Marker {
  kafkaVersion?: string;
  kafkaLib: string;
  registryJar: string;
}

/** The cached artifacts if a previous fetch completed (its marker is written last), without running Maven. */
export function cachedArtifacts(
  env: NodeJS.ProcessEnv = process.env,
  release: KafkaRelease = kafkaRelease(env),
): Artifacts | undefined {
  const entry = cacheEntry(cacheRoot(env), release);
  try {
    const marker = JSON.parse(readFileSync(join(entry, MARKER), 'utf8')) as Marker;
    if (!existsSync(marker.registryJar) || !existsSync(marker.kafkaLib)) return undefined;
    return { kafka: release, kafkaLib: marker.kafkaLib, registryJar: marker.registryJar };
  } catch {
    return undefined;
  }
}

/** An executable named `name` on PATH, or undefined. */
export function onPath(name: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {}
  }
  return undefined;
}

export interface JavaFound {
  path: string;
  major: number;
}

/** `$JAVA_HOME/bin/java`, else `java` on PATH, with its major version (from `java -version`). */
export async function findJava(env: NodeJS.ProcessEnv = process.env): Promise<JavaFound | undefined> {
  const fromHome = env.JAVA_HOME ? join(env.JAVA_HOME, 'bin', 'java') : undefined;
  const path = fromHome && existsSync(fromHome) ? fromHome : onPath('java', env);
  if (!path) return undefined;
  try {
    const { stderr, stdout } = await run(path, ['-version'], { timeout: 15_000 });
    const major = parseJavaMajor(`${stderr}\n${stdout}`);
    return major === undefined ? undefined : { path, major };
  } catch {
    return undefined;
  }
}

/** `openjdk version "17.0.15"` → 17; the pre-9 form `"1.8.0_392"` → 8. */
export function parseJavaMajor(versionOutput: string): number | undefined {
  const match = /version "(\d+)(?:\.(\d+))?/.exec(versionOutput);
  if (!match) return undefined;
  const first = Number(match[1]);
  return first === 1 && match[2] ? Number(match[2]) : first;
}

/** The Java to run the stack with, or a StackError saying what is missing. */
export async function requireJava(env: NodeJS.ProcessEnv = process.env): Promise<JavaFound> {
  const java = await findJava(env);
  if (!java) throw new StackError(`no Java found: install Java ${MIN_JAVA} or newer (or set JAVA_HOME)`);
  if (java.major < MIN_JAVA) {
    throw new StackError(
      `${java.path} is Java ${java.major}; the local stack needs Java ${MIN_JAVA} or newer`,
    );
  }
  return java;
}

/**
 * Returns the artifacts, fetching them first if the cache lacks them. A complete cache is recognised by
 * its marker alone: no Maven run, nothing downloaded. A fetch goes to a temporary folder that is renamed
 * into place, so two fetches at once (CI and a test run) cannot leave a half-filled entry behind.
 */
export async function ensureArtifacts(
  options: { env?: NodeJS.ProcessEnv; logger?: Logger; release?: KafkaRelease } = {},
): Promise<Artifacts> {
  const env = options.env ?? process.env;
  const release = options.release ?? kafkaRelease(env);
  const cached = cachedArtifacts(env, release);
  if (cached) return cached;

  const mvn = onPath('mvn', env);
  if (!mvn) {
    throw new StackError(
      'the local stack needs Kafka and Apicurio from Maven Central, and Maven (mvn) is not on PATH: install Maven, or set KAFKA_BROKERS and SCHEMA_REGISTRY_URL',
    );
  }
  const entry = cacheEntry(cacheRoot(env), release);
  const staging = `${entry}.tmp-${process.pid}`;
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true });
  const started = Date.now();
  options.logger?.info(
    { cache: entry, kafka: release.version },
    'fetching Kafka and Apicurio Registry from Maven Central (once per Kafka version)',
  );
  try {
    await run(
      mvn,
      [
        '-q',
        '-B',
        '-f',
        release.pom,
        'dependency:copy-dependencies@kafka',
        'dependency:copy@registry',
        `-Dhookledger.kafka.lib=${join(staging, 'kafka-lib')}`,
        `-Dhookledger.downloads=${join(staging, 'downloads')}`,
      ],
      { env, timeout: 15 * 60_000, maxBuffer: 16 * 1_048_576 },
    );
    const downloads = join(staging, 'downloads');
    const tarball = readdirSync(downloads).find((name) => name.endsWith('.tar.gz'));
    if (!tarball) throw new Error(`Maven put no registry tarball in ${downloads}`);
    await mkdir(join(staging, 'registry'));
    // System tar: it understands the PAX headers in Apicurio's tarball, which Maven's unpacker does not.
    await run('tar', ['-xzf', join(downloads, tarball), '-C', join(staging, 'registry')], {
      timeout: 5 * 60_000,
    });
    await rm(downloads, { recursive: true });
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    const detail =
      error instanceof Error && 'stdout' in error
        ? String(error.stdout).trim().split('\n').slice(-3).join(' ')
        : '';
    throw new StackError(
      `could not fetch the local stack's artifacts with Maven (${(error as Error).message.split('\n')[0]}${detail ? `: ${detail}` : ''})`,
    );
  }

  const registryDir = join(staging, 'registry');
  const jarName = findRegistryJar(registryDir);
  if (!jarName) {
    await rm(staging, { recursive: true, force: true });
    throw new StackError(`no runnable jar found in Apicurio's distribution (${registryDir})`);
  }
  const marker: Marker = {
    kafkaVersion: release.version,
    kafkaLib: join(entry, 'kafka-lib'),
    registryJar: join(entry, 'registry', jarName),
  };
  await writeFile(join(staging, MARKER), `${JSON.stringify(marker, null, 2)}\n`);
  try {
    await rename(staging, entry);
  } catch {
    // Another process finished first: its entry is complete (renamed with its marker); use that one.
    await rm(staging, { recursive: true, force: true });
  }
  options.logger?.info({ seconds: (Date.now() - started) / 1000 }, 'artifacts cached');
  const ready = cachedArtifacts(env, release);
  if (!ready) throw new StackError(`the artifact cache at ${entry} is incomplete: delete it and run again`);
  return ready;
}

/**
 * The registry's runnable jar, relative to its folder: 3.0.x ships `apicurio-registry-app-<v>-runner.jar`
 * at the top, later versions a Quarkus fast-jar (`quarkus-run.jar`, possibly one folder down).
 */
export function findRegistryJar(dir: string): string | undefined {
  const top = readdirSync(dir);
  const runner = top.find((name) => name.endsWith('-runner.jar'));
  if (runner) return runner;
  if (top.includes('quarkus-run.jar')) return 'quarkus-run.jar';
  for (const name of top) {
    if (existsSync(join(dir, name, 'quarkus-run.jar'))) return join(name, 'quarkus-run.jar');
  }
  return undefined;
}
