import { describe, expect, it } from 'vitest';
import {
  ERRORS,
  isFenced,
  KafkaError,
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
