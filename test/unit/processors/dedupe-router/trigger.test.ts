import { describe, expect, it } from 'vitest';
import { parseTrigger } from '../../../../processors/dedupe-router/trigger.js';

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

  it.each([['Ping'], ['userAdded'], ['User-Added'], ['User'], [''], ['ToDo']])(
    '%s does not split',
    (name) => {
      expect(parseTrigger(name)).toBeUndefined();
    },
  );
});
