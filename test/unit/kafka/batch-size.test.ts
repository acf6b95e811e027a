import { describe, expect, it } from 'vitest';
import { batchBytesFor, maxMessageBytesOf } from '../../../runtime/kafka/batch-size.js';

describe('batchBytesFor', () => {
  it('keeps librdkafka’s default under the broker’s default limit, and goes under a smaller one with room for framing', () => {
    expect(batchBytesFor(undefined)).toBe(1_000_000);
    expect(batchBytesFor(1_048_588)).toBe(1_000_000);
    expect(batchBytesFor(100_000)).toBe(99_488);
    expect(batchBytesFor(4_000)).toBe(3_488);
  });
});

describe('maxMessageBytesOf', () => {
  it('reads a described max.message.bytes, and nothing from a missing or odd one', () => {
    expect(maxMessageBytesOf({ 'max.message.bytes': '4000' })).toBe(4_000);
    expect(maxMessageBytesOf({})).toBeUndefined();
    expect(maxMessageBytesOf(undefined)).toBeUndefined();
    expect(maxMessageBytesOf({ 'max.message.bytes': 'lots' })).toBeUndefined();
    expect(maxMessageBytesOf({ 'max.message.bytes': '0' })).toBeUndefined();
  });
});
