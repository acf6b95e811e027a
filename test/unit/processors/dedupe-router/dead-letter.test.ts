import { describe, expect, it } from 'vitest';
import { buildDeadLetter, DLQ_REASONS } from '../../../../processors/dedupe-router/dead-letter.js';
import { envelopeFor } from '../fixtures.js';

describe('buildDeadLetter', () => {
  it('keeps every envelope field, byte for byte, beside the reason and the stage', () => {
    const envelope = envelopeFor('{"broken', { trigger: 'UserAdded', webhookDate: 'x', query: 'a=1' });
    const value = buildDeadLetter(envelope, 'body-not-json', 'the body is not JSON', 'dedupe-router.parse');
    const { reason, message, stage, ...rest } = value;
    expect({ reason, message, stage }).toEqual({
      reason: 'body-not-json',
      message: 'the body is not JSON',
      stage: 'dedupe-router.parse',
    });
    expect(rest).toEqual(envelope);
  });

  it('reason codes are unique kebab-case words', () => {
    expect(new Set(DLQ_REASONS).size).toBe(DLQ_REASONS.length);
    for (const reason of DLQ_REASONS) expect(reason).toMatch(/^[a-z]+(-[a-z]+)*$/);
  });
});
