import fc from 'fast-check';
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

  it('writes the same bytes as a BigInt int64 for any time, and refuses what is no time', () => {
    const viaBigInt = (kind: 'routed' | 'failure' | 'dead-lettered', seenAt: number) => {
      const out = Buffer.alloc(10);
      out.writeUInt8(1, 0);
      out.writeUInt8(DECISION_TAGS[kind], 1);
      out.writeBigInt64BE(BigInt(Math.trunc(seenAt)), 2);
      return out;
    };
    const times = fc.oneof(
      fc.integer({ min: -(2 ** 31), max: 2 ** 31 }),
      fc.maxSafeInteger(),
      fc.double({ min: -(2 ** 62), max: 2 ** 62, noNaN: true }),
      fc.constantFrom(0, -0, -1, 2 ** 32, 2 ** 32 - 1, -(2 ** 32), 2 ** 53, -(2 ** 53), 1e17 + 0.5),
    );
    fc.assert(
      fc.property(fc.constantFrom('routed', 'failure', 'dead-lettered' as const), times, (kind, seenAt) => {
        expect(encodeDedupeDecision({ kind, seenAt }).toString('hex')).toBe(
          viaBigInt(kind, seenAt).toString('hex'),
        );
      }),
      { numRuns: 5_000 },
    );
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY])
      expect(() => encodeDedupeDecision({ kind: 'routed', seenAt: bad })).toThrow(RangeError);
  });
});
