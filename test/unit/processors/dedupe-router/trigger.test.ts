import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { lastWordStart, parseTrigger, triggerOfType } from '../../../../processors/dedupe-router/trigger.js';

describe('parseTrigger', () => {
  it.each([
    ['UserAdded', 'User', 'Added', 'entity.user'],
    ['UserDeleted', 'User', 'Deleted', 'entity.user'],
    ['AccountAdded', 'Account', 'Added', 'entity.account'],
    ['DocumentAdded', 'Document', 'Added', 'entity.document'],
    ['ToDoAdded', 'ToDo', 'Added', 'entity.todo'],
    ['ToDoDone', 'ToDo', 'Done', 'entity.todo'],
    ['EnergySwitchAdded', 'EnergySwitch', 'Added', 'entity.energy-switch'],
    ['EnergySwitchUpdated', 'EnergySwitch', 'Updated', 'entity.energy-switch'],
    ['EnergySwitchCommissionUpdated', 'EnergySwitch', 'CommissionUpdated', 'entity.energy-switch'],
    ['PaymentAdded', 'Payment', 'Added', 'entity.other'],
    ['BankAccountLinked', 'BankAccount', 'Linked', 'entity.other'],
    ['UsernameChanged', 'Username', 'Changed', 'entity.other'],
    ['SMSSent', 'SMS', 'Sent', 'entity.other'],
  ])('%s is %s + %s in %s', (name, entity, action, topic) => {
    expect(parseTrigger(name)).toEqual({
      trigger: name,
      entity,
      action,
      topic,
      deletes: action === 'Deleted',
    });
  });

  it('a *Deleted trigger deletes; other actions do not', () => {
    expect(parseTrigger('PaymentDeleted')?.deletes).toBe(true);
    expect(parseTrigger('ToDoDone')?.deletes).toBe(false);
  });

  it('the last word is where /(?:[A-Z][a-z0-9]+|[A-Z]+)$/ first matches, found without backtracking', () => {
    const LAST_WORD = /(?:[A-Z][a-z0-9]+|[A-Z]+)$/;
    const name = fc.string({
      unit: fc.constantFrom('A', 'B', 'Z', 'a', 'z', '0', '9', '-', 'é'),
      maxLength: 12,
    });
    fc.assert(
      fc.property(name, (s) => {
        expect(lastWordStart(s)).toBe(LAST_WORD.exec(s)?.index ?? -1);
      }),
      { numRuns: 20_000 },
    );
    // A name as long as a body: the expression took about 18 s over 128 KB of capitals.
    const capitals = 'A'.repeat(1_000_000);
    expect(lastWordStart(`${capitals}1`)).toBe(999_999);
    expect(parseTrigger(`Payment${capitals}`)?.action.length).toBe(1_000_000);
  });

  it.each([['Ping'], ['userAdded'], ['User-Added'], ['User'], [''], ['ToDo']])(
    '%s does not split',
    (name) => {
      expect(parseTrigger(name)).toBeUndefined();
    },
  );
});

describe('triggerOfType: the record’s __typename says which entity a trigger is of', () => {
  it.each([
    // Another entity whose name starts with a known one's: entity.other, by the record's own name.
    ['UserProfileUpdated', 'UserProfile', 'UserProfile', 'Updated', 'entity.other'],
    ['EnergySwitchQuoteAdded', 'EnergySwitchQuote', 'EnergySwitchQuote', 'Added', 'entity.other'],
    ['AccountTransactionDeleted', 'AccountTransaction', 'AccountTransaction', 'Deleted', 'entity.other'],
    // The known entity itself, or a type name the trigger does not start with: as parsed.
    ['UserProfileUpdated', 'User', 'User', 'ProfileUpdated', 'entity.user'],
    [
      'EnergySwitchCommissionUpdated',
      'EnergySwitch',
      'EnergySwitch',
      'CommissionUpdated',
      'entity.energy-switch',
    ],
    ['UserAdded', 'UserProfile', 'User', 'Added', 'entity.user'],
    ['UserAdded', 'Customer', 'User', 'Added', 'entity.user'],
    // No action left after the type name, or not at a word boundary: as parsed.
    ['UserProfileUpdated', 'UserProfileUpdated', 'User', 'ProfileUpdated', 'entity.user'],
    ['UserProfileUpdated', 'UserPro', 'User', 'ProfileUpdated', 'entity.user'],
    // Already another entity's: unchanged.
    ['PaymentAdded', 'PaymentPlan', 'Payment', 'Added', 'entity.other'],
  ])('%s with __typename %s is %s + %s in %s', (name, typename, entity, action, topic) => {
    const parsed = parseTrigger(name)!;
    const typed = triggerOfType(parsed, typename);
    expect(typed).toEqual({ trigger: name, entity, action, topic, deletes: action === 'Deleted' });
    if (typed.entity === parsed.entity) expect(typed).toBe(parsed);
  });
});
