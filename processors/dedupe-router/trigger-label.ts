// The trigger as a metric label: the contract's triggers by name, anything else "other", so a sender
// cannot create series by inventing trigger names.

/** The triggers the platform's contract lists (docs/webhook-contract.md, Events). */
export const CONTRACT_TRIGGERS: readonly string[] = [
  'UserAdded',
  'UserDeleted',
  'AccountAdded',
  'DocumentAdded',
  'ToDoAdded',
  'ToDoDone',
  'EnergySwitchAdded',
  'EnergySwitchUpdated',
];

export const OTHER_TRIGGER = 'other';

const KNOWN = new Set(CONTRACT_TRIGGERS);

export function triggerLabel(trigger: string | null): string {
  return trigger !== null && KNOWN.has(trigger) ? trigger : OTHER_TRIGGER;
}
