import { describe, expect, it } from 'vitest';
import { isFencedError } from '../../../runtime/streams/errors.js';

describe('reading Kafka errors', () => {
  it('tells a fenced producer from other failures, however kafkajs wraps it', () => {
    const epoch = Object.assign(new Error('Producer attempted an operation with an old epoch'), {
      type: 'INVALID_PRODUCER_EPOCH',
    });
    expect(isFencedError(epoch)).toBe(true);
    expect(isFencedError(new Error('retries exceeded', { cause: epoch }))).toBe(true);
    expect(isFencedError(Object.assign(new Error('x'), { type: 'PRODUCER_FENCED' }))).toBe(true);
    expect(isFencedError(Object.assign(new Error('timeout'), { type: 'REQUEST_TIMED_OUT' }))).toBe(false);
    expect(isFencedError(new Error('Connection closed'))).toBe(false);
  });
});
