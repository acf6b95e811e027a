import { describe, expect, it } from 'vitest';
import {
  DECISION_TAGS,
  decisionOfTag,
  decodeDedupeDecision,
  encodeDedupeDecision,
} from '../../../../processors/dedupe-router/dedupe-decision.js';

describe('the dedupe changelog value', () => {
  it.each([['routed'], ['failure'], ['dead-lettered']] as const)(
    'a %s decision round-trips in 10 bytes',
    (kind) => {
      const seenAt = Date.parse('2026-11-20T10:15:30.123Z');
      const bytes = encodeDedupeDecision({ kind, seenAt });
      expect(bytes.byteLength).toBe(10);
      expect(decodeDedupeDecision(bytes)).toEqual({ kind, seenAt });
      expect(decisionOfTag(DECISION_TAGS[kind])).toBe(kind);
    },
  );

  it('has a fixed layout: version, decision, big-endian epoch ms', () => {
    expect(encodeDedupeDecision({ kind: 'failure', seenAt: 258 }).toString('hex')).toBe(
      '01020000000000000102',
    );
  });

  it('reads a value inside a larger buffer', () => {
    const inner = encodeDedupeDecision({ kind: 'routed', seenAt: 7 });
    const outer = Buffer.concat([Buffer.from([9, 9]), inner]);
    expect(decodeDedupeDecision(outer.subarray(2))).toEqual({ kind: 'routed', seenAt: 7 });
  });

  it('refuses a value it cannot read rather than guess', () => {
    expect(() => decodeDedupeDecision(Buffer.alloc(0))).toThrow(/unreadable/);
    expect(() => decodeDedupeDecision(Buffer.from('02010000000000000001', 'hex'))).toThrow(/version 2/);
    expect(() => decodeDedupeDecision(Buffer.from('01070000000000000001', 'hex'))).toThrow(
      /unknown decision 7/,
    );
  });
});
