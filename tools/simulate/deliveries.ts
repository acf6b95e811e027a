// The simulated platform's deliveries: a pure, seeded generator of webhook bodies shaped exactly like the
// platform's (see docs/webhook-contract.md and the fixtures), over a small evolving world
// of users, accounts, documents, to-dos and energy switches. Asked for, a webhook is an OperationFailure
// answer or one the router dead-letters (invalid.ts), made from what the platform would have sent.

// The triggers the contract lists (§6): one list, the router's.
import { CONTRACT_TRIGGERS, type ContractTrigger } from '../../processors/dedupe-router/trigger-label.js';
import { type BodyParts, DEFAULT_API, type Json, recommendedQuery, webhookDate, writeBody } from './body.js';
import {
  ENERGY_SWITCH_SELECTIONS,
  type EnergySwitchState,
  type EnergySwitchVariant,
  energySwitchRecord,
  newEnergySwitch,
  updateEnergySwitch,
} from './energy-switch.js';
import { INVALID_KINDS, type InvalidReason, isInvalidReason } from './invalid.js';
import { createRandom, type Random } from './prng.js';

export { CONTRACT_TRIGGERS, type ContractTrigger };

/** Triggers an operator may enable on request (§6 rule 2); none starts with a contract entity's name. */
export const DEFAULT_OTHER_TRIGGERS = ['PaymentAdded', 'InvoiceAdded', 'MeterReadingAdded'] as const;

/** How often each contract trigger fires, relative to the others. */
const TRIGGER_WEIGHTS: Record<ContractTrigger, number> = {
  UserAdded: 12,
  UserDeleted: 3,
  AccountAdded: 8,
  DocumentAdded: 10,
  ToDoAdded: 10,
  ToDoDone: 7,
  EnergySwitchAdded: 15,
  EnergySwitchUpdated: 35,
};

/** Which recommended query the platform runs for an energy switch trigger, with these odds. */
const VARIANT_ODDS: Record<'EnergySwitchAdded' | 'EnergySwitchUpdated', [EnergySwitchVariant, number][]> = {
  EnergySwitchAdded: [
    ['full', 0.85],
    ['minimal', 0.15],
  ],
  EnergySwitchUpdated: [
    ['full', 0.4],
    ['minimal', 0.25],
    ['commission', 0.35],
  ],
};

const ID_PREFIX: Record<string, string> = {
  User: 'usr',
  Account: 'acc',
  Document: 'doc',
  ToDo: 'todo',
  EnergySwitch: 'es',
};

const FAILURE_DESCRIPTION: Record<string, string> = {
  EnergySwitch: 'Energy switch not found',
  ToDo: 'To-do not found',
};

/**
 * Where the router sends a webhook: its entity stream (a deletion included), `webhooks.failures` (an
 * OperationFailure answer to a trigger that is not a deletion), or `webhooks.dlq` for this reason.
 */
export type Intent = 'routed' | 'failure' | InvalidReason;

export interface Delivery {
  /** Position in generation order, from 0. */
  seq: number;
  /** `webhook.id`. */
  id: string;
  trigger: string;
  /** `webhook.date` as written. */
  date: string;
  /** `webhook.date`, ms since the epoch. */
  occurredAt: number;
  /** The GraphQL type queried (`EnergySwitch`, `User`, `Payment`, …); empty for a Ping. */
  entity: string;
  /** `query.variables.id`; empty for a Ping. */
  entityId: string;
  /** The recommended query variant, for energy switches. */
  variant?: EnergySwitchVariant;
  /** `data` holds the record, or an OperationFailure in its place (as the platform wrote it, before any invalid change). */
  result: 'record' | 'operation-failure';
  /** Where the router sends it. */
  route: 'entity' | 'failures' | 'dlq';
  /** Why the router dead-letters it, when `route` is `dlq`. */
  reason?: InvalidReason;
  /** The exact body text. */
  body: string;
}

export interface GeneratorOptions {
  seed: string;
  /** `webhook.date` of the first delivery, ms since the epoch. */
  start: number;
  /** `query.api`. */
  api?: string;
  /** Operator-enabled triggers beyond the contract's; empty for none. */
  otherTriggers?: readonly string[];
  /** Share of deliveries that use one of `otherTriggers`. */
  otherRate?: number;
  /** Mean time between two triggers, ms. */
  meanGapMs?: number;
  /**
   * The clock: no webhook is dated after it, as no trigger fires in the future (§2.1: when the webhook
   * was triggered). Unset: dates follow `start` and the gaps alone (a seed and a start, the same bytes).
   */
  notAfter?: () => number;
  /**
   * Share of energy-switch deliveries sent with the Minimal query, the rest with the Full one (the
   * platform's odds of the three variants when unset).
   */
  minimalRate?: number;
  /**
   * Told each switch's record as the platform has it after every trigger (the simulator's /graphql
   * answers from it), and whether this delivery of it was thin (the Minimal query: a receiver fetches it).
   */
  onSwitch?: (id: string, fullRecord: Json, thin: boolean) => void;
}

export interface DeliveryGenerator {
  /** The next webhook, made to go where `intent` says (default: its entity stream). */
  next(intent?: Intent): Delivery;
}

/** The entity a trigger names: the longest contract entity it starts with, else all but its last CamelCase word. */
export function entityOf(trigger: string): string {
  const known = Object.keys(ID_PREFIX)
    .filter((entity) => trigger.startsWith(entity))
    .sort((a, b) => b.length - a.length)[0];
  return known ?? trigger.replace(/[A-Z][a-z0-9]*$/, '');
}

function idPrefix(entity: string): string {
  return ID_PREFIX[entity] ?? entity.slice(0, 3).toLowerCase();
}

function failureDescription(entity: string): string {
  return FAILURE_DESCRIPTION[entity] ?? `${entity} not found`;
}

function weighted<T>(random: Random, odds: readonly (readonly [T, number])[]): T {
  const total = odds.reduce((sum, [, weight]) => sum + weight, 0);
  let roll = random.next() * total;
  for (const [value, weight] of odds) {
    roll -= weight;
    if (roll < 0) return value;
  }
  return odds[odds.length - 1]![0];
}

/** A bounded pool of ids: old entities stop receiving events, as they do in real life. */
class Pool {
  private readonly ids: string[] = [];
  constructor(private readonly limit = 500) {}
  get size(): number {
    return this.ids.length;
  }
  add(id: string): void {
    this.ids.push(id);
    if (this.ids.length > this.limit) this.ids.shift();
  }
  pick(random: Random): string | undefined {
    return this.ids.length === 0 ? undefined : random.pick(this.ids);
  }
  take(random: Random): string | undefined {
    if (this.ids.length === 0) return undefined;
    return this.ids.splice(random.int(0, this.ids.length - 1), 1)[0];
  }
}

/** Deliveries in the order the platform's triggers fire; the same options give the same bytes. */
export function createDeliveryGenerator({
  seed,
  start,
  api = DEFAULT_API,
  otherTriggers = DEFAULT_OTHER_TRIGGERS,
  otherRate = 0.02,
  meanGapMs = 1_500,
  notAfter,
  minimalRate,
  onSwitch,
}: GeneratorOptions): DeliveryGenerator {
  const random = createRandom(seed);
  const ids = random.fork('ids');
  const values = random.fork('values');
  // Entity numbers start at a seeded base so two seeds rarely share ids.
  const counters = new Map<string, number>();
  const base = ids.int(1, 899) * 10_000;
  const users = new Pool();
  const todos = new Pool();
  const switches = new Map<string, EnergySwitchState>();
  const switchIds = new Pool();
  let lastSwitch: string | undefined;
  let clock = start;
  let seq = 0;

  const newId = (entity: string) => {
    const n = (counters.get(entity) ?? base) + 1;
    counters.set(entity, n);
    return `${idPrefix(entity)}_${n}`;
  };
  // Far above any id handed out: the platform answers OperationFailure, not found.
  const unknownId = (entity: string) => `${idPrefix(entity)}_${ids.int(9_000_000, 9_999_999)}`;

  function chooseTrigger(): string {
    if (otherTriggers.length > 0 && random.chance(otherRate)) return random.pick(otherTriggers);
    const trigger = weighted(random, Object.entries(TRIGGER_WEIGHTS) as [ContractTrigger, number][]);
    // Deletions, completions and updates need something to act on.
    if (trigger === 'UserDeleted' && users.size === 0) return 'UserAdded';
    if (trigger === 'ToDoDone' && todos.size === 0) return 'ToDoAdded';
    if (trigger === 'EnergySwitchUpdated' && switchIds.size === 0) return 'EnergySwitchAdded';
    return trigger;
  }

  /** A trigger whose OperationFailure answer is a failure, not the expected answer to a deletion. */
  function chooseFailingTrigger(): string {
    const trigger = chooseTrigger();
    return trigger.endsWith('Deleted') ? chooseFailingTrigger() : trigger;
  }

  function energySwitch(
    trigger: 'EnergySwitchAdded' | 'EnergySwitchUpdated',
    failed: boolean,
    forced?: EnergySwitchVariant,
  ) {
    const variant =
      forced ??
      (minimalRate === undefined
        ? weighted(random, VARIANT_ODDS[trigger])
        : random.chance(minimalRate)
          ? 'minimal'
          : 'full');
    if (failed) return { variant, entityId: unknownId('EnergySwitch'), record: undefined };
    let state: EnergySwitchState;
    if (trigger === 'EnergySwitchAdded') {
      const userId = users.pick(random) ?? newId('User');
      state = newEnergySwitch(
        values,
        { id: newId('EnergySwitch'), userId },
        clock - values.int(1, 90) * 1000,
      );
      switchIds.add(state.id);
    } else {
      // Updates cluster: the switch just touched is likely touched again (which makes reordering matter).
      const id = lastSwitch && random.chance(0.4) ? lastSwitch : switchIds.pick(random)!;
      state = updateEnergySwitch(values, switches.get(id)!, clock - values.int(1, 90) * 1000);
    }
    switches.set(state.id, state);
    onSwitch?.(state.id, energySwitchRecord(state, 'full'), variant === 'minimal');
    lastSwitch = state.id;
    return { variant, entityId: state.id, record: energySwitchRecord(state, variant) };
  }

  /** The body the platform sends for a trigger, and what the generator knows about it. */
  function contractDelivery(trigger: string, failed: boolean, variantWanted?: EnergySwitchVariant) {
    const entity = entityOf(trigger);
    let entityId: string;
    let variant: EnergySwitchVariant | undefined;
    let record: Json | undefined;
    if (trigger === 'EnergySwitchAdded' || trigger === 'EnergySwitchUpdated') {
      ({ variant, entityId, record } = energySwitch(trigger, failed, variantWanted));
    } else if (failed) {
      entityId = unknownId(entity);
    } else if (trigger === 'UserDeleted') {
      // The user is gone by the time the query runs: the platform answers OperationFailure.
      entityId = users.take(random)!;
    } else if (trigger === 'ToDoDone') {
      entityId = todos.take(random)!;
      record = { __typename: entity, id: entityId };
    } else {
      entityId = newId(entity);
      if (trigger === 'UserAdded') users.add(entityId);
      if (trigger === 'ToDoAdded') todos.add(entityId);
      record = { __typename: entity, id: entityId };
    }
    const selection = variant ? ENERGY_SWITCH_SELECTIONS[variant] : 'id';
    const result: Json = record ?? {
      __typename: 'OperationFailure',
      description: failureDescription(entity),
    };
    const parts: BodyParts = {
      webhook: { id: `wh_${ids.hex(24)}`, trigger, date: webhookDate(clock) },
      query: { api, query: recommendedQuery(entity, selection), variables: { id: entityId } },
      data: { [`get${entity}`]: result },
    };
    return { parts, entity, entityId, variant, isRecord: record !== undefined };
  }

  /** A delivery the router dead-letters for `reason`, made from what the platform would have sent. */
  function invalidDelivery(reason: InvalidReason) {
    const kind = INVALID_KINDS[reason];
    if (kind.base === 'none') {
      const parts: BodyParts = {
        webhook: { id: `wh_${ids.hex(24)}`, trigger: '', date: webhookDate(clock) },
        query: { api, query: '', variables: {} },
        data: null,
      };
      return { parts: kind.apply(parts), entity: '', entityId: '', variant: undefined, isRecord: true };
    }
    const made =
      kind.base === 'energy-switch-full'
        ? contractDelivery(
            switchIds.size > 0 && random.chance(0.5) ? 'EnergySwitchUpdated' : 'EnergySwitchAdded',
            false,
            'full',
          )
        : contractDelivery(chooseTrigger(), false);
    return { ...made, parts: kind.apply(made.parts) };
  }

  return {
    next(intent: Intent = 'routed') {
      clock += Math.max(1, Math.round(random.exponential(meanGapMs)));
      // Sending faster than the gaps (--rate unlimited) would otherwise date webhooks minutes ahead.
      if (notAfter !== undefined) clock = Math.min(clock, notAfter());
      const made = isInvalidReason(intent)
        ? invalidDelivery(intent)
        : intent === 'failure'
          ? contractDelivery(chooseFailingTrigger(), true)
          : contractDelivery(chooseTrigger(), false);
      const { parts, entity, entityId, variant } = made;
      return {
        seq: seq++,
        id: parts.webhook.id,
        trigger: parts.webhook.trigger,
        date: parts.webhook.date,
        occurredAt: clock,
        entity,
        entityId,
        ...(variant ? { variant } : {}),
        result: made.isRecord ? 'record' : 'operation-failure',
        route: isInvalidReason(intent) ? 'dlq' : intent === 'failure' ? 'failures' : 'entity',
        ...(isInvalidReason(intent) ? { reason: intent } : {}),
        body: writeBody(parts.webhook, parts.query, parts.data, parts.errors),
      };
    },
  };
}
