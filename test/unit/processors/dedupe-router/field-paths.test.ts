import { describe, expect, it } from 'vitest';
import { fieldPaths, flattenFields } from '../../../../processors/dedupe-router/field-paths.js';
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
