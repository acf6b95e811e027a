import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { StackError } from '../../../tools/stack/errors.js';
import {
  DEFAULT_KAFKA_VERSION,
  findKafkaRelease,
  KAFKA_RELEASES,
  kafkaRelease,
  requireKafkaRelease,
} from '../../../tools/stack/kafka-versions.js';

describe('HOOKLEDGER_KAFKA_VERSION', () => {
  it('defaults to 3.9.1 when unset or blank', () => {
    expect(DEFAULT_KAFKA_VERSION).toBe('3.9.1');
    expect(kafkaRelease({}).version).toBe('3.9.1');
    expect(kafkaRelease({ HOOKLEDGER_KAFKA_VERSION: '  ' }).version).toBe('3.9.1');
  });

  it('picks 4.1.2 by its full version or by its line', () => {
    expect(kafkaRelease({ HOOKLEDGER_KAFKA_VERSION: '4.1.2' }).version).toBe('4.1.2');
    expect(kafkaRelease({ HOOKLEDGER_KAFKA_VERSION: ' 4.1 ' }).version).toBe('4.1.2');
    expect(kafkaRelease({ HOOKLEDGER_KAFKA_VERSION: '3.9' }).version).toBe('3.9.1');
  });

  it('refuses a version it cannot run, naming the variable and the versions it can', () => {
    for (const wanted of ['4.0.0', '4.1.9', '4', 'latest', '4.1.2-rc1']) {
      expect(() => kafkaRelease({ HOOKLEDGER_KAFKA_VERSION: wanted })).toThrow(StackError);
      expect(() => kafkaRelease({ HOOKLEDGER_KAFKA_VERSION: wanted })).toThrow(
        /HOOKLEDGER_KAFKA_VERSION: expected one of 3\.9\.1, 4\.1\.2/,
      );
    }
    expect(findKafkaRelease('4.0')).toBeUndefined();
    expect(() => requireKafkaRelease('3.8.0')).toThrow(/Kafka 3\.8\.0 is not one this checkout can run/);
  });
});

describe('what differs between the Kafka versions', () => {
  it('logs through reload4j up to 3.x and through log4j 2 from 4.x', () => {
    expect(requireKafkaRelease('3.9.1')).toMatchObject({ major: 3, logging: 'log4j' });
    expect(requireKafkaRelease('4.1.2')).toMatchObject({ major: 4, logging: 'log4j2' });
  });

  it('fetches each version through a POM of its own that names that version and its logging jars', () => {
    const poms = new Set(KAFKA_RELEASES.map((release) => release.pom));
    expect(poms.size).toBe(KAFKA_RELEASES.length);
    for (const release of KAFKA_RELEASES) {
      const pom = readFileSync(release.pom, 'utf8');
      expect(pom).toContain(`<kafka.version>${release.version}</kafka.version>`);
      expect(pom).toContain('<artifactId>kafka-tools</artifactId>');
      if (release.logging === 'log4j2') {
        expect(pom).toContain('<artifactId>log4j-slf4j-impl</artifactId>');
        expect(pom).not.toContain('<artifactId>reload4j</artifactId>');
      } else {
        expect(pom).toContain('<artifactId>slf4j-reload4j</artifactId>');
      }
    }
  });

  it('runs the same version as a container on Docker', () => {
    for (const release of KAFKA_RELEASES) expect(release.image).toBe(`apache/kafka:${release.version}`);
  });
});
