import kafkajs from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { kafkaLevelFor, pinoLevelFor } from '../../../runtime/kafka/client.js';

const { logLevel } = kafkajs;
/** A log entry as kafkajs's logger hands it over: the namespace beside the entry, not in the message. */
const entry = (level: number, message: string, namespace = 'Consumer') => ({
  namespace,
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
    expect(pinoLevelFor(entry(logLevel.ERROR, 'Crash: KafkaJSNumberOfRetriesExceeded'))).toBe('error');
    expect(pinoLevelFor(entry(logLevel.WARN, 'x'))).toBe('warn');
    expect(pinoLevelFor(entry(logLevel.INFO, 'x'))).toBe('info');
    expect(pinoLevelFor(entry(logLevel.DEBUG, 'x'))).toBe('debug');
  });

  it('keeps the error responses kafkajs retries or its caller handles at debug', () => {
    // As kafkajs's connection logs a coordinator that is still loading, and a topic that exists.
    expect(
      pinoLevelFor(entry(logLevel.ERROR, 'Response InitProducerId(key: 22, version: 1)', 'Connection')),
    ).toBe('debug');
    expect(
      pinoLevelFor(entry(logLevel.ERROR, 'Response CreateTopics(key: 19, version: 3)', 'Connection')),
    ).toBe('debug');
  });

  it('still reports a connection that fails, and responses logged by anything but the connection', () => {
    expect(pinoLevelFor(entry(logLevel.ERROR, 'Connection error: connect ECONNREFUSED', 'Connection'))).toBe(
      'error',
    );
    expect(
      pinoLevelFor(entry(logLevel.ERROR, 'Response InitProducerId(key: 22, version: 1)', 'Producer')),
    ).toBe('error');
  });

  it("silences only the idempotent producer's warning about limited retries, which ingest wants", () => {
    const limited = 'Limiting retries for the idempotent producer may invalidate EoS guarantees';
    expect(pinoLevelFor(entry(logLevel.WARN, limited, 'Producer'))).toBe('debug');
    expect(pinoLevelFor(entry(logLevel.WARN, 'Failed to send messages', 'Producer'))).toBe('warn');
  });
});
