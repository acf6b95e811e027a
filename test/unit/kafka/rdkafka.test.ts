import type { KafkaConsumer } from '@confluentinc/kafka-javascript';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import {
  createConsumer,
  ERRORS,
  isFatalError,
  isFenced,
  KafkaError,
  type KafkaSettings,
  pinoLevelForSeverity,
  toKafkaError,
} from '../../../runtime/kafka/rdkafka.js';

describe('librdkafka errors', () => {
  it('keep their code and the flags librdkafka set on them', () => {
    const error = toKafkaError(
      { message: 'Local: Message timed out', code: ERRORS.ERR__MSG_TIMED_OUT, isRetriable: true },
      'delivery',
    );
    expect(error).toBeInstanceOf(KafkaError);
    expect(error.message).toBe('delivery: Local: Message timed out');
    expect(error.code).toBe(ERRORS.ERR__MSG_TIMED_OUT);
    expect(error.retriable).toBe(true);
    expect(error.fatal).toBe(false);
  });

  it('wrap a thrown value that is not an error at all', () => {
    expect(toKafkaError('boom').message).toBe('boom');
  });

  it('tell a fenced producer or instance from other failures', () => {
    expect(isFenced({ code: ERRORS.ERR__FENCED })).toBe(true);
    expect(isFenced({ code: ERRORS.ERR_PRODUCER_FENCED })).toBe(true);
    expect(isFenced({ code: ERRORS.ERR_FENCED_INSTANCE_ID })).toBe(true);
    expect(isFenced({ code: ERRORS.ERR__TRANSPORT })).toBe(false);
    expect(isFenced(undefined)).toBe(false);
  });
});

describe('fatal errors', () => {
  it('are told by their flag, their code, or the text the binding emits them with', () => {
    expect(isFatalError({ message: 'x', isFatal: true })).toBe(true);
    expect(isFatalError({ message: 'x', code: ERRORS.ERR__FATAL })).toBe(true);
    // lib/client.js: LibrdKafkaError.create(new Error('Local: Fatal error')), code -1 and no flag.
    expect(isFatalError({ message: 'fatal error', code: -1, origin: 'local' })).toBe(true);
    expect(isFatalError(toKafkaError({ message: 'fatal error', code: -1 }, 'producer'))).toBe(true);
    expect(isFatalError({ message: 'all broker connections are down', code: -1 })).toBe(false);
    expect(isFatalError({ message: 'Broker: Not enough in-sync replicas', code: 19 })).toBe(false);
    expect(isFatalError(undefined)).toBe(false);
  });
});

describe('librdkafka log severities', () => {
  it('map to the pino level that prints them', () => {
    expect([0, 3, 4, 5, 6, 7].map(pinoLevelForSeverity)).toEqual([
      'error',
      'error',
      'warn',
      'info',
      'info',
      'debug',
    ]);
  });
});

describe("a consumer's properties", () => {
  const settings = (properties?: Record<string, string>): KafkaSettings => ({
    brokers: ['127.0.0.1:1'],
    clientId: 'test',
    logger: pino({ level: 'silent' }),
    properties,
  });
  const config = (consumer: KafkaConsumer) =>
    (consumer as unknown as { globalConfig: Record<string, unknown> }).globalConfig;

  it('fetch a full partition again after 10 ms, not librdkafka’s 1 s', () => {
    expect(config(createConsumer(settings(), { 'group.id': 'g' }))['fetch.queue.backoff.ms']).toBe(10);
  });

  it('take the connection’s properties (KAFKA_CONFIG_FILE) and the caller’s over the defaults', () => {
    const fromFile = createConsumer(settings({ 'fetch.queue.backoff.ms': '500' }), { 'group.id': 'g' });
    expect(config(fromFile)['fetch.queue.backoff.ms']).toBe('500');
    const fromCaller = createConsumer(settings(), { 'group.id': 'g', 'fetch.queue.backoff.ms': 50 } as never);
    expect(config(fromCaller)['fetch.queue.backoff.ms']).toBe(50);
  });
});
