// Which Kafka the stack runs (HOOKLEDGER_KAFKA_VERSION), and what differs between the versions it knows.
import { fileURLToPath } from 'node:url';
import { StackError } from './errors.js';

/** 3.x logs through slf4j to reload4j (log4j 1.x config); 4.x to log4j 2, which reads another format. */
export type KafkaLogging = 'log4j' | 'log4j2';

export interface KafkaRelease {
  version: string;
  major: number;
  /** The POM that fetches this broker and the registry; its hash names the artifact cache entry. */
  pom: string;
  logging: KafkaLogging;
  /** The same broker as a container, for the Docker stack. */
  image: string;
}

export const DEFAULT_KAFKA_VERSION = '3.9.1';

const here = (name: string) => fileURLToPath(new URL(`./${name}`, import.meta.url));

/** Newest first within a line: `4.1` picks the first 4.1.x here. */
export const KAFKA_RELEASES: readonly KafkaRelease[] = [
  {
    version: '3.9.1',
    major: 3,
    // The default keeps the POM it always had: caches fetched before 4.1 existed stay valid.
    pom: here('pom.xml'),
    logging: 'log4j',
    image: 'apache/kafka:3.9.1',
  },
  {
    version: '4.1.2',
    major: 4,
    pom: here('pom-kafka-4.1.xml'),
    logging: 'log4j2',
    image: 'apache/kafka:4.1.2',
  },
];

/** A known version, exactly (`4.1.2`) or by its line (`4.1`); undefined for anything else. */
export function findKafkaRelease(version: string): KafkaRelease | undefined {
  const wanted = version.trim();
  const exact = KAFKA_RELEASES.find((release) => release.version === wanted);
  if (exact || !/^\d+\.\d+$/.test(wanted)) return exact;
  return KAFKA_RELEASES.find((release) => release.version.startsWith(`${wanted}.`));
}

/** `HOOKLEDGER_KAFKA_VERSION`, default 3.9.1. An unknown version is an error, never a silent default. */
export function kafkaRelease(env: NodeJS.ProcessEnv = process.env): KafkaRelease {
  const wanted = (env.HOOKLEDGER_KAFKA_VERSION ?? '').trim();
  if (wanted === '') return requireKafkaRelease(DEFAULT_KAFKA_VERSION);
  const release = findKafkaRelease(wanted);
  if (!release) {
    throw new StackError(
      `HOOKLEDGER_KAFKA_VERSION: expected one of ${KAFKA_RELEASES.map((r) => r.version).join(', ')} (got ${JSON.stringify(env.HOOKLEDGER_KAFKA_VERSION)})`,
    );
  }
  return release;
}

/** The release a state directory recorded; a version this checkout no longer knows is an error. */
export function requireKafkaRelease(version: string): KafkaRelease {
  const release = findKafkaRelease(version);
  if (!release) {
    throw new StackError(
      `Kafka ${version} is not one this checkout can run (${KAFKA_RELEASES.map((r) => r.version).join(', ')})`,
    );
  }
  return release;
}
