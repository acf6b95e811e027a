import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  fieldPaths,
  fieldPathsExceed,
  flattenFields,
} from '../../../../processors/dedupe-router/field-paths.js';
import { type JsonObject, parseBody, scalarText } from '../../../../processors/dedupe-router/parse-body.js';

function json(text: string): JsonObject {
  const result = parseBody(Buffer.from(text));
  if (!result.ok) throw new Error(result.message);
  return result.value;
}

describe('fieldPaths', () => {
  it('names nested leaves by dotted path, in the order sent, without __typename', () => {
    const record = json(
      '{"__typename":"EnergySwitch","id":"e","savings":{"__typename":"Money","currency":"GBP","amount":1.10},"commission":{"status":"x"}}',
    );
    expect(fieldPaths(record)).toEqual(['id', 'savings.currency', 'savings.amount', 'commission.status']);
  });

  it('treats null, arrays and empty objects as leaves', () => {
    expect(fieldPaths(json('{"user":null,"tags":[1,2],"meta":{},"only":{"__typename":"T"}}'))).toEqual([
      'user',
      'tags',
      'meta',
      'only',
    ]);
  });

  it('gives the values at those paths', () => {
    const values = flattenFields(json('{"savings":{"amount":210.10},"user":{"tenantId":null}}'));
    expect([...values].map(([k, v]) => [k, scalarText(v)])).toEqual([
      ['savings.amount', '210.10'],
      ['user.tenantId', null],
    ]);
  });
});

describe('fieldPathsExceed', () => {
  it('says whether the paths fieldPaths builds total more than the limit', () => {
    const key = fc.constantFrom('a', 'bb', '__typename', 'ccc', 'é', '😀', 'id');
    const record = fc.letrec<{ value: unknown }>((tie) => ({
      value: fc.oneof(
        { depthSize: 'small' },
        fc.constantFrom(null, 1, 'x', [], {}),
        fc.dictionary(key, tie('value'), { maxKeys: 4 }),
      ),
    })).value;
    fc.assert(
      fc.property(fc.dictionary(key, record, { maxKeys: 5 }), fc.nat(60), (object, limit) => {
        const parsed = json(JSON.stringify(object));
        const total = fieldPaths(parsed).reduce((sum, path) => sum + path.length, 0);
        expect(fieldPathsExceed(parsed, limit)).toBe(total > limit);
      }),
      { numRuns: 5_000 },
    );
  });

  it('answers at once for a record whose paths would be hundreds of times its size', () => {
    // 400 levels, each keyed by 2,000 characters with a leaf beside: 1.6 MB of JSON, 321 MB of paths.
    let text = '{"leaf":1}';
    for (let level = 0; level < 400; level++) text = `{"${'k'.repeat(1_999)}${level % 10}":${text},"leaf":1}`;
    expect(fieldPathsExceed(json(text), 2 * 1_048_576)).toBe(true);
    expect(fieldPathsExceed(json('{"a":{"b":1},"c":2}'), 4)).toBe(false);
  });
});
