import type { KafkaConsumer, LibrdKafkaError } from '@confluentinc/kafka-javascript';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import {
  call,
  createConsumer,
  ERRORS,
  isFatalError,
  isFenced,
  KafkaError,
  type KafkaSettings,
  pinoLevelForSeverity,
  toKafkaError,
  unansweredKafkaCalls,
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

describe('unanswered client calls', () => {
  it('are named, and counted, until their callback comes, whether it brings an answer, an error or a throw', async () => {
    const callbacks: ((error: LibrdKafkaError | null) => void)[] = [];
    const first = call('commitTransaction', (cb) => callbacks.push(cb));
    const second = call('commitTransaction', (cb) => callbacks.push(cb));
    const third = call('seek', (cb) => callbacks.push(cb));
    expect(unansweredKafkaCalls()).toEqual(['commitTransaction ×2', 'seek']);

    callbacks[0]!(null);
    callbacks[2]!({
      message: 'Local: Timed out',
      code: ERRORS.ERR__TIMED_OUT,
      errno: ERRORS.ERR__TIMED_OUT,
      origin: 'kafka',
    });
    await first;
    await expect(third).rejects.toThrow('seek: Local: Timed out');
    expect(unansweredKafkaCalls()).toEqual(['commitTransaction']);

    // A second callback of the same call does not count for another.
    callbacks[0]!(null);
    expect(unansweredKafkaCalls()).toEqual(['commitTransaction']);
    await expect(
      call('initTransactions', () => {
        throw new Error('no transactional.id');
      }),
    ).rejects.toThrow('no transactional.id');
    callbacks[1]!(null);
    await second;
    expect(unansweredKafkaCalls()).toEqual([]);
  });
});
