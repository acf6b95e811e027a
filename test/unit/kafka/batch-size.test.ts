import { describe, expect, it } from 'vitest';
import { batchBytesFor } from '../../../runtime/kafka/batch-size.js';

describe('batchBytesFor', () => {
  it('keeps librdkafka’s default under the broker’s default limit, and goes under a smaller one with room for framing', () => {
    expect(batchBytesFor(undefined)).toBe(1_000_000);
    expect(batchBytesFor(1_048_588)).toBe(1_000_000);
    expect(batchBytesFor(100_000)).toBe(99_488);
    expect(batchBytesFor(4_000)).toBe(3_488);
  });
});
