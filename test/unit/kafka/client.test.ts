import kafkajs from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { kafkaLevelFor, pinoLevelFor } from '../../../runtime/kafka/client.js';

const { logLevel } = kafkajs;
const entry = (level: number, message: string) => ({
  level,
  log: { message, timestamp: '', logger: 'kafkajs' },
});

describe('kafkajs logs through pino', () => {
  it('lets kafkajs produce only what the pino level prints', () => {
    expect(kafkaLevelFor('debug')).toBe(logLevel.DEBUG);
    expect(kafkaLevelFor('info')).toBe(logLevel.INFO);
    expect(kafkaLevelFor('warn')).toBe(logLevel.WARN);
    expect(kafkaLevelFor('fatal')).toBe(logLevel.ERROR);
    expect(kafkaLevelFor('silent')).toBe(logLevel.NOTHING);
  });

  it('maps each kafkajs level to its pino method', () => {
    expect(pinoLevelFor(entry(logLevel.ERROR, '[Consumer] Crash'))).toBe('error');
    expect(pinoLevelFor(entry(logLevel.WARN, 'x'))).toBe('warn');
    expect(pinoLevelFor(entry(logLevel.INFO, 'x'))).toBe('info');
    expect(pinoLevelFor(entry(logLevel.DEBUG, 'x'))).toBe('debug');
  });

  it('keeps error responses the caller handles (topic already exists, …) at debug', () => {
    expect(
      pinoLevelFor(entry(logLevel.ERROR, '[Connection] Response CreateTopics(key: 19, version: 3)')),
    ).toBe('debug');
  });
});
