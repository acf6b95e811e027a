// The trigger as a metric label: the contract's triggers by name, anything else "other", so a sender
// cannot create series by inventing trigger names.

/** The triggers the platform's contract lists (docs/webhook-contract.md, Events). */
export const CONTRACT_TRIGGERS = [
  'UserAdded',
  'UserDeleted',
  'AccountAdded',
  'DocumentAdded',
  'ToDoAdded',
  'ToDoDone',
  'EnergySwitchAdded',
  'EnergySwitchUpdated',
] as const;
export type ContractTrigger = (typeof CONTRACT_TRIGGERS)[number];

export const OTHER_TRIGGER = 'other';

const KNOWN = new Set<string>(CONTRACT_TRIGGERS);

export function triggerLabel(trigger: string | null): string {
  return trigger !== null && KNOWN.has(trigger) ? trigger : OTHER_TRIGGER;
}
