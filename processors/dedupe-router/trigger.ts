// Splits a trigger name (`UserAdded`, `ToDoDone`, `PaymentAdded`) into entity and action, and
// names the entity stream it goes to.

/** The entities with a stream of their own, by name as it starts a trigger. */
export const KNOWN_ENTITIES = {
  User: 'entity.user',
  Account: 'entity.account',
  Document: 'entity.document',
  ToDo: 'entity.todo',
  EnergySwitch: 'entity.energy-switch',
} as const;

export type KnownEntity = keyof typeof KNOWN_ENTITIES;
export type EntityTopic = (typeof KNOWN_ENTITIES)[KnownEntity] | 'entity.other';

export interface Trigger {
  /** As sent; authoritative (the contract lists `AccountAdded` under "Updated": it stays `Added`). */
  readonly trigger: string;
  readonly entity: string;
  readonly action: string;
  readonly topic: EntityTopic;
  /** `*Deleted`: the entity is gone, and an OperationFailure is the expected answer. */
  readonly deletes: boolean;
}

/** The action of a deletion. */
const DELETED = 'Deleted';

// Longest first, so a longer known name wins over a shorter one that prefixes it.
const KNOWN_BY_LENGTH = (Object.keys(KNOWN_ENTITIES) as KnownEntity[]).sort((a, b) => b.length - a.length);

// A GraphQL-style type name followed by at least one more CamelCase word.
const TRIGGER_NAME = /^[A-Z][A-Za-z0-9]*$/;

const isUpper = (code: number): boolean => code >= 65 && code <= 90;
const isLowerOrDigit = (code: number): boolean => (code >= 97 && code <= 122) || (code >= 48 && code <= 57);

/**
 * Where the last CamelCase word of a trigger name starts: `Added` in `PaymentAdded`, `Sent` in
 * `SMSSent`, `ADDED` in `PaymentADDED`; -1 if none. The index of the leftmost match of
 * `/(?:[A-Z][a-z0-9]+|[A-Z]+)$/`, found by one scan from the end: that expression, unanchored at its
 * start, backtracks quadratically over a run of capitals, and a trigger's length is the sender's
 * (a 128 KB one held the router for 17 s).
 */
export function lastWordStart(name: string): number {
  let start = name.length;
  // A trailing run of lower case letters and digits is a word with the capital before it, or none.
  while (start > 0 && isLowerOrDigit(name.charCodeAt(start - 1))) start--;
  if (start < name.length) return start > 0 && isUpper(name.charCodeAt(start - 1)) ? start - 1 : -1;
  // Else the trailing run of capitals is the word.
  while (start > 0 && isUpper(name.charCodeAt(start - 1))) start--;
  return start < name.length ? start : -1;
}

/**
 * Entity and action of a trigger: the longest known entity name it starts with (at a word
 * boundary), else everything up to its last CamelCase word. Undefined when the name has no
 * entity and action to split into (`Ping`, `userAdded`, `User-Added`).
 */
export function parseTrigger(trigger: string): Trigger | undefined {
  if (!TRIGGER_NAME.test(trigger)) return undefined;
  for (const entity of KNOWN_BY_LENGTH) {
    // `ToDo` alone names an entity but no action (it is not To + Do).
    if (trigger === entity) return undefined;
    const action = trigger.slice(entity.length);
    // `UsernameChanged` is not a User event: the action must start a new word.
    if (trigger.startsWith(entity) && /^[A-Z]/.test(action)) {
      return make(trigger, entity, action, KNOWN_ENTITIES[entity]);
    }
  }
  const word = lastWordStart(trigger);
  if (word <= 0) return undefined;
  return make(trigger, trigger.slice(0, word), trigger.slice(word), 'entity.other');
}

/**
 * The trigger as the record's `__typename` reads it. A trigger of an entity without a stream of its own
 * may start with the name of one that has (`UserProfileUpdated`, `EnergySwitchQuoteAdded`): split at
 * the longest known name, it reads as a User or an EnergySwitch event. A record that names itself
 * `UserProfile`, where the trigger is that name and an action, says which entity it is: it goes to
 * entity.other as a `UserProfile` event. Any other type name leaves the trigger as parsed.
 */
export function triggerOfType(trigger: Trigger, typename: string): Trigger {
  if (trigger.topic === 'entity.other' || typename.length <= trigger.entity.length) return trigger;
  if (!trigger.trigger.startsWith(typename)) return trigger;
  const action = trigger.trigger.slice(typename.length);
  if (!/^[A-Z]/.test(action)) return trigger;
  return make(trigger.trigger, typename, action, 'entity.other');
}

/**
 * A `*Deleted` trigger answered without a record (an OperationFailure, null: the entity is gone), as the
 * deletion it is. `UserProfileDeleted` splits at the longest known name into a User event
 * `ProfileDeleted`; with no record to name its type, the trigger itself says what was deleted: a
 * `UserProfile`, on entity.other (as when a `UserProfile` record answers it), never a User's tombstone.
 * Undefined for a trigger that is not `*Deleted`.
 */
export function deletionTrigger(trigger: Trigger): Trigger | undefined {
  if (trigger.deletes) return trigger;
  if (!trigger.action.endsWith(DELETED)) return undefined;
  return make(trigger.trigger, trigger.trigger.slice(0, -DELETED.length), DELETED, 'entity.other');
}

function make(trigger: string, entity: string, action: string, topic: EntityTopic): Trigger {
  return { trigger, entity, action, topic, deletes: action === DELETED };
}
