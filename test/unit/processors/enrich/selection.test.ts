import { describe, expect, it } from 'vitest';
import { missingPaths, readQueryShape } from '../../../../processors/enrich/selection.js';
import { FULL_ENERGY_SWITCH_QUERY } from '../../../../runtime/config.js';

const MINIMAL =
  'query EnergySwitch($id: ID!) { getEnergySwitch(id: $id) { __typename ... on OperationFailure { description(locale: en_GB) } ... on EnergySwitch { id date } } }';

describe('readQueryShape', () => {
  it("reads the contract's Full query as the 21 leaf paths of its EnergySwitch branch", () => {
    const shape = readQueryShape(FULL_ENERGY_SWITCH_QUERY);
    expect(shape.rootField).toBe('getEnergySwitch');
    expect(shape.paths).toHaveLength(21);
    expect(shape.paths).toContain('user.tenantId');
    expect(shape.paths).toContain('commission.statusDate');
    expect(shape.paths).not.toContain('description');
    expect(shape.paths).not.toContain('__typename');
  });

  it('reads aliases, arguments, directives, comments and a bare selection set', () => {
    const shape = readQueryShape(`{
      # the switch
      s: getEnergySwitch(id: "x", n: 1.5) @include(if: true) { id money: savings { amount } }
    }`);
    expect(shape).toEqual({ rootField: 's', paths: ['id', 'money.amount'] });
  });

  it('refuses what it cannot read, saying what it met', () => {
    expect(() => readQueryShape('mutation { x }')).toThrow(/expected a query operation/);
    expect(() => readQueryShape('query { a { id } b { id } }')).toThrow(/one root field, found 2/);
    expect(() => readQueryShape('query { a { id }')).toThrow(/ends too early/);
    expect(() => readQueryShape('query { a { ...Frag } }')).toThrow(/named fragments/);
  });
});

describe('missingPaths', () => {
  const full = readQueryShape(FULL_ENERGY_SWITCH_QUERY).paths;

  it('a Minimal delivery lacks everything but id and date', () => {
    const missing = missingPaths(readQueryShape(MINIMAL).paths, full);
    expect(missing).toHaveLength(19);
    expect(missing).not.toContain('id');
  });

  it('a Full delivery lacks nothing, a null object standing for its leaves', () => {
    expect(missingPaths(full, full)).toEqual([]);
    const withNullUser = [...full.filter((p) => !p.startsWith('user.')), 'user'];
    expect(missingPaths(withNullUser, full)).toEqual([]);
  });

  it('a commission-only delivery lacks the rest of the record', () => {
    const carried = ['id', ...full.filter((p) => p.startsWith('commission.'))];
    expect(missingPaths(carried, full)).toContain('postcode');
    expect(missingPaths(carried, full)).not.toContain('commission.status');
  });
});
