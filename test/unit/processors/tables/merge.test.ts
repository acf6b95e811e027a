import { describe, expect, it } from 'vitest';
import type { EntityEvent } from '../../../../processors/dedupe-router/entity-event.js';
import { fieldPaths, flattenFields } from '../../../../processors/dedupe-router/field-paths.js';
import {
  type JsonObject,
  parseJsonText,
  scalarText,
} from '../../../../processors/dedupe-router/parse-body.js';
import { route } from '../../../../processors/dedupe-router/route.js';
import {
  applyEvent,
  type Candidate,
  compareCandidates,
  compareVersions,
  ENERGY_SWITCH,
  type EntityLatest,
  type EntityState,
  isForgettable,
  latestValue,
  type MergeEvent,
  type TableFields,
  tableFields,
  type Version,
} from '../../../../processors/tables/merge.js';
import { manifest, storedDeliveries } from '../fixtures.js';

const TABLE_OF: Record<string, string> = {
  'entity.user': 'entity.user.latest',
  'entity.account': 'entity.account.latest',
  'entity.document': 'entity.document.latest',
  'entity.todo': 'entity.todo.latest',
  'entity.energy-switch': 'entity.energy-switch.latest',
};

function event(
  webhookId: string,
  date: string,
  record: Record<string, unknown> | null,
  { entity = 'EnergySwitch', deleted = false } = {},
): MergeEvent {
  const data = JSON.stringify(record);
  return {
    webhookId,
    entity,
    deleted,
    occurredAt: Date.parse(date),
    fields: record === null || deleted ? [] : fieldPaths(parseJsonText(data) as never),
    data,
  };
}

function applyAll(events: readonly MergeEvent[], start?: EntityState): EntityState | undefined {
  let state = start;
  for (const e of events) state = applyEvent(state, e).state;
  return state;
}

describe("the merge reproduces the fixtures' final tables", () => {
  // Every first delivery, in manifest order, through the router and into the tables.
  const tables = new Map<string, Map<string, EntityState>>();
  for (const { delivery, envelope } of storedDeliveries()) {
    if (delivery.expect.duplicateOf !== undefined) continue;
    for (const output of route(envelope).outputs) {
      const table = TABLE_OF[output.topic];
      if (table === undefined) continue;
      const states = tables.get(table) ?? new Map<string, EntityState>();
      tables.set(table, states);
      states.set(output.key, applyEvent(states.get(output.key), output.value as EntityEvent).state);
    }
  }

  for (const [table, rows] of Object.entries(manifest.finalTables)) {
    for (const [key, expected] of Object.entries(rows)) {
      it(`${table} ${key} holds what the manifest says`, () => {
        const actual = tableFields(tables.get(table)?.get(key));
        if (expected === null) {
          expect(actual).toBeNull();
        } else {
          expect(actual).not.toBeNull();
          const shown = Object.fromEntries(Object.keys(expected).map((field) => [field, actual?.[field]]));
          expect(shown).toEqual(expected);
        }
      });
    }
  }

  it('the retries, had they got through, would change nothing', () => {
    for (const { delivery, envelope } of storedDeliveries()) {
      if (delivery.expect.duplicateOf === undefined) continue;
      for (const output of route(envelope).outputs) {
        const table = TABLE_OF[output.topic];
        if (table === undefined) continue;
        const result = applyEvent(tables.get(table)?.get(output.key), output.value as EntityEvent);
        expect(result.stateChanged, delivery.name).toBe(false);
      }
    }
  });

  it('a user that carried only its id has only its id in the table', () => {
    expect({ ...tableFields(tables.get('entity.user.latest')?.get('fixtures/usr_1001')) }).toEqual({
      id: 'usr_1001',
    });
  });

  it('the energy switch row takes each field from the newest delivery that carried it', () => {
    expect({ ...tableFields(tables.get('entity.energy-switch.latest')?.get('fixtures/es_501')) }).toEqual({
      id: 'es_501',
      date: '2026-11-20T10:59:00Z',
      'user.id': 'usr_1001',
      'user.tenantId': null,
      userSwitchReferenceId: 'REF-55120',
      postcode: 'SW1A 1AA',
      'provider.code': 'ACME',
      'provider.name': 'Acme Energy Ltd',
      tariffName: 'Acme Flex 24M',
      'projectedSpend.currency': 'GBP',
      'projectedSpend.amount': '1234.56',
      'savings.currency': 'GBP',
      'savings.amount': '210.10',
      fuelType: 'dualFuel',
      fuelsSwitched: '2',
      'commission.fuelsWaitingForUpdate': '0',
      'commission.fuelsWithSwitchTerminated': '0',
      'commission.fuelsWithCommissionExpected': '0',
      'commission.fuelsWithCommissionReceived': '2',
      'commission.statusDate': '2026-11-21T07:59:00Z',
      'commission.status': 'commissionReceived',
    });
  });
});

describe('merge rules', () => {
  it('a delivery updates only the fields it carried', () => {
    const state = applyAll([
      event('wh_1', '2026-01-01T10:00:00Z', { id: 'a', tariffName: 'T1', postcode: 'P1' }),
      event('wh_2', '2026-01-01T11:00:00Z', { id: 'a', tariffName: 'T2' }),
    ]);
    expect({ ...tableFields(state) }).toEqual({ id: 'a', tariffName: 'T2', postcode: 'P1' });
  });

  it("a newer delivery repeating the same values still becomes the row's newest delivery", () => {
    const older = event('wh_1', '2026-01-01T10:00:00Z', { tariffName: 'same' });
    const newer = event('wh_2', '2026-01-01T11:00:00Z', { tariffName: 'same' });
    const first = applyEvent(undefined, older);
    const second = applyEvent(first.state, newer);
    expect(second.tableChanged).toBe(true);
    expect(latestValue(second.state)).toMatchObject({ webhookId: 'wh_2', occurredAt: newer.occurredAt });
    // Arriving in the other order, the older one changes nothing.
    expect(applyEvent(applyEvent(undefined, newer).state, older).tableChanged).toBe(false);
  });

  it('an older delivery arriving late loses to the newer one', () => {
    const state = applyAll([
      event('wh_2', '2026-01-01T11:00:00Z', { tariffName: 'new' }),
      event('wh_1', '2026-01-01T10:00:00Z', { tariffName: 'old' }),
    ]);
    expect(tableFields(state)?.tariffName).toBe('new');
  });

  it('instants are compared, not strings: an offset date is ordered by the instant it names', () => {
    // 10:30+01:00 is 09:30Z: older than 10:00Z although its text sorts later.
    const older = { ...event('wh_b', '2026-01-01T10:30:00+01:00', { tariffName: 'older' }) };
    const newer = event('wh_a', '2026-01-01T10:00:00Z', { tariffName: 'newer' });
    expect(tableFields(applyAll([newer, older]))?.tariffName).toBe('newer');
  });

  it('equal dates are ordered by webhook id bytewise', () => {
    const a = event('wh_a', '2026-01-01T10:00:00Z', { tariffName: 'a' });
    const b = event('wh_b', '2026-01-01T10:00:00Z', { tariffName: 'b' });
    expect(tableFields(applyAll([b, a]))?.tariffName).toBe('b');
    // UTF-8 byte order, not UTF-16: U+FF5E (EF BD 9E) sorts before U+1F600 (F0 9F 98 80).
    const bmp = event('\uff5e', '2026-01-01T10:00:00Z', { tariffName: 'bmp' });
    const astral = event('\u{1f600}', '2026-01-01T10:00:00Z', { tariffName: 'astral' });
    expect(tableFields(applyAll([astral, bmp]))?.tariffName).toBe('astral');
  });

  it('commission fields are ordered by commission.statusDate before webhook.date', () => {
    const state = applyAll([
      event('wh_1', '2026-01-02T00:00:00Z', {
        commission: { statusDate: '2026-01-01T00:00:00Z', status: 'old' },
      }),
      event('wh_2', '2026-01-01T00:00:00Z', {
        commission: { statusDate: '2026-01-01T12:00:00Z', status: 'new' },
      }),
    ]);
    expect(tableFields(state)?.['commission.status']).toBe('new');
  });

  it('commission fields are ordered by webhook.date for other entities', () => {
    const opts = { entity: 'Account' };
    const state = applyAll([
      event(
        'wh_1',
        '2026-01-02T00:00:00Z',
        { commission: { statusDate: '2026-01-01T00:00:00Z', status: 'A' } },
        opts,
      ),
      event(
        'wh_2',
        '2026-01-01T00:00:00Z',
        { commission: { statusDate: '2026-01-01T12:00:00Z', status: 'B' } },
        opts,
      ),
    ]);
    expect(tableFields(state)?.['commission.status']).toBe('A');
  });

  it('a deletion makes the row a tombstone, and an older add arriving later cannot resurrect it', () => {
    const deletion = event('wh_d', '2026-01-01T12:30:00Z', null, { entity: 'User', deleted: true });
    const lateAdd = event('wh_a', '2026-01-01T12:10:00Z', { id: 'u' }, { entity: 'User' });
    const afterDelete = applyEvent(undefined, deletion);
    expect(afterDelete.tableChanged).toBe(true);
    expect(tableFields(afterDelete.state)).toBeNull();
    const late = applyEvent(afterDelete.state, lateAdd);
    expect(late.stateChanged).toBe(false);
    expect(tableFields(late.state)).toBeNull();
  });

  it('a newer add after a deletion starts the entity again from its own fields only', () => {
    const state = applyAll([
      event('wh_1', '2026-01-01T10:00:00Z', { id: 'u', name: 'Ann', email: 'a@x' }, { entity: 'User' }),
      event('wh_2', '2026-01-01T11:00:00Z', null, { entity: 'User', deleted: true }),
      event('wh_3', '2026-01-01T12:00:00Z', { id: 'u', name: 'Bob' }, { entity: 'User' }),
    ]);
    expect({ ...tableFields(state) }).toEqual({ id: 'u', name: 'Bob' });
  });

  it('a deletion older than the fields it meets removes only older fields', () => {
    const state = applyAll([
      event('wh_3', '2026-01-01T12:00:00Z', { name: 'Bob' }, { entity: 'User' }),
      event('wh_1', '2026-01-01T10:00:00Z', { email: 'a@x' }, { entity: 'User' }),
      event('wh_2', '2026-01-01T11:00:00Z', null, { entity: 'User', deleted: true }),
    ]);
    expect({ ...tableFields(state) }).toEqual({ name: 'Bob' });
  });

  it("a commission that lost to an older delivery's later status wins once a deletion removes that one", () => {
    // wh_1 has the later statusDate but happened before the deletion; wh_3 happened after it.
    const events = [
      event('wh_1', '2026-01-01T10:00:00Z', {
        commission: { statusDate: '2026-01-05T00:00:00Z', status: 'pre' },
      }),
      event('wh_3', '2026-01-01T12:00:00Z', {
        commission: { statusDate: '2026-01-01T00:00:00Z', status: 'post' },
      }),
      event('wh_2', '2026-01-01T11:00:00Z', null, { deleted: true }),
    ];
    expect(tableFields(applyAll(events))?.['commission.status']).toBe('post');
    expect(tableFields(applyAll([events[2]!, events[0]!, events[1]!]))?.['commission.status']).toBe('post');
  });

  it('a nested object set to null by a newer delivery hides the older leaves under it', () => {
    const state = applyAll([
      event('wh_1', '2026-01-01T10:00:00Z', { user: { id: 'u1', tenantId: 't' } }),
      event('wh_2', '2026-01-01T11:00:00Z', { user: null }),
    ]);
    expect({ ...tableFields(state) }).toEqual({ user: null });
    const again = applyAll([event('wh_3', '2026-01-01T12:00:00Z', { user: { id: 'u2' } })], state);
    expect({ ...tableFields(again) }).toEqual({ 'user.id': 'u2' });
  });

  it('values keep their text: money as sent, booleans and arrays as text, null as null', () => {
    const e: MergeEvent = {
      webhookId: 'wh_1',
      entity: 'EnergySwitch',
      deleted: false,
      occurredAt: 0,
      fields: ['savings.amount', 'flag', 'tags', 'user.tenantId'],
      data: '{"savings":{"amount":210.10},"flag":true,"tags":["a",1.50],"user":{"tenantId":null}}',
    };
    expect({ ...tableFields(applyAll([e])) }).toEqual({
      'savings.amount': '210.10',
      flag: 'true',
      tags: '["a",1.50]',
      'user.tenantId': null,
    });
  });

  it('a field named __proto__ is an ordinary field', () => {
    const e: MergeEvent = {
      webhookId: 'wh_1',
      entity: 'Other',
      deleted: false,
      occurredAt: 0,
      fields: ['__proto__'],
      data: '{"__proto__":"x"}',
    };
    const table = tableFields(applyAll([e]));
    expect(Object.keys(table!)).toEqual(['__proto__']);
    expect(Object.getPrototypeOf({})).toBe(Object.prototype);
  });

  it('a state knows nothing until an event arrives', () => {
    expect(tableFields(undefined)).toBeUndefined();
  });

  it('a deleted entity is never forgotten: its marker still stops a late older event after months', () => {
    const deleted = applyAll([event('wh_1', '2026-01-01T10:00:00Z', null, { deleted: true })])!;
    expect(isForgettable(deleted, Date.parse('2026-01-09T10:00:00Z'))).toBe(false);
    expect(isForgettable(deleted, Date.parse('2027-01-01T00:00:00Z'))).toBe(false);
    const alive = applyAll([event('wh_2', '2026-01-01T11:00:00Z', { id: 'x' })], deleted)!;
    expect(isForgettable(alive, Date.parse('2027-01-01T00:00:00Z'))).toBe(false);
    expect(isForgettable({ deletedAt: null, seenAt: null, fields: {} }, 1)).toBe(true);
    // A replay's stream time may run months ahead of a partition (its raw partitions progress unevenly):
    // a late add dated before the deletion, met after any sweep, still leaves the entity deleted.
    const late = event('wh_0', '2026-01-01T09:59:00Z', { id: 'x', tariffName: 'old' });
    expect(tableFields(applyAll([late], deleted))).toBeNull();
    expect(
      tableFields(applyAll([late, event('wh_1', '2026-01-01T10:00:00Z', null, { deleted: true })])),
    ).toBeNull();
  });
});

describe('merge properties', () => {
  // A small seeded generator, so a failure names the seed that reproduces it.
  function rng(seed: number): () => number {
    let s = seed >>> 0;
    return () => {
      s = (s + 0x6d2b79f5) >>> 0;
      let t = s;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }

  function randomEvents(seed: number): MergeEvent[] {
    const r = rng(seed);
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)]!;
    const hours = ['08', '09', '10', '11', '12'];
    const count = 2 + Math.floor(r() * 8);
    return Array.from({ length: count }, (_, i) => {
      const date = `2026-01-01T${pick(hours)}:00:00Z`;
      if (r() < 0.2) return event(`wh_${seed}_${i}`, date, null, { deleted: true });
      const record: Record<string, unknown> = { id: 'es_1' };
      if (r() < 0.5) record.tariffName = pick(['A', 'B', 'C']);
      if (r() < 0.5) record.savings = { currency: 'GBP', amount: pick(['1.10', '2.20']) };
      if (r() < 0.3) record.user = r() < 0.3 ? null : { id: pick(['u1', 'u2']) };
      if (r() < 0.6) {
        record.commission = {
          status: pick(['expected', 'received', 'terminated']),
          ...(r() < 0.8 ? { statusDate: `2026-01-0${1 + Math.floor(r() * 3)}T00:00:00Z` } : {}),
        };
      }
      // Numbers stay as their text: write the amount unquoted like the platform does.
      const e = event(`wh_${seed}_${i}`, date, record);
      return { ...e, data: e.data.replace(/"amount":"([\d.]+)"/, '"amount":$1') };
    });
  }

  function shuffled<T>(xs: readonly T[], r: () => number): T[] {
    const out = [...xs];
    for (let i = out.length - 1; i > 0; i--) {
      const j = Math.floor(r() * (i + 1));
      [out[i], out[j]] = [out[j]!, out[i]!];
    }
    return out;
  }

  it('any order of the same events gives the same state and table', () => {
    for (let seed = 1; seed <= 300; seed++) {
      const events = randomEvents(seed);
      const state = applyAll(events);
      const r = rng(seed * 7919);
      for (let k = 0; k < 5; k++) {
        const other = applyAll(shuffled(events, r));
        expect(other, `seed ${seed}`).toEqual(state);
        expect(tableFields(other), `seed ${seed}`).toEqual(tableFields(state));
      }
    }
  });

  it('applying an event twice is the same as applying it once', () => {
    for (let seed = 1; seed <= 300; seed++) {
      const events = randomEvents(seed);
      const once = applyAll(events);
      const r = rng(seed * 104729);
      // Every event again, at random places after its first application.
      const twice = shuffled([...events, ...events], r);
      expect(applyAll(twice), `seed ${seed}`).toEqual(once);
      for (const e of events) {
        const again = applyEvent(once, e);
        expect(again.stateChanged, `seed ${seed}`).toBe(false);
        expect(again.tableChanged, `seed ${seed}`).toBe(false);
      }
    }
  });

  // The definition, computed from the whole set at once: the newest deletion D; the entity exists
  // iff some other event is newer than D; each field from the best event newer than D carrying it.
  function reference(events: readonly MergeEvent[]): TableFields | null | undefined {
    const version = (e: MergeEvent): Version => ({ at: e.occurredAt, webhookId: e.webhookId });
    let newestDeletion: Version | undefined;
    for (const e of events) {
      if (e.deleted && (newestDeletion === undefined || compareVersions(version(e), newestDeletion) > 0)) {
        newestDeletion = version(e);
      }
    }
    const live = events.filter(
      (e) => !e.deleted && (newestDeletion === undefined || compareVersions(version(e), newestDeletion) > 0),
    );
    if (live.length === 0) return newestDeletion === undefined ? undefined : null;
    const winners = new Map<string, Candidate>();
    for (const e of live) {
      const values = flattenFields(parseJsonText(e.data) as JsonObject);
      const statusDate = values.get('commission.statusDate');
      for (const path of e.fields) {
        const ordered = ENERGY_SWITCH(path) !== undefined;
        const c: Candidate = {
          ...version(e),
          value: scalarText(values.get(path)!),
          ...(ordered ? { orderAt: typeof statusDate === 'string' ? Date.parse(statusDate) : null } : {}),
        };
        const best = winners.get(path);
        if (best === undefined || compareCandidates(c, best) > 0) winners.set(path, c);
      }
    }
    const out: TableFields = {};
    for (const [path, c] of winners) {
      const shadowed = [...winners].some(
        ([other, o]) =>
          (path.startsWith(`${other}.`) && compareVersions(o, c) > 0) ||
          (other.startsWith(`${path}.`) && compareVersions(o, c) >= 0),
      );
      if (!shadowed) out[path] = c.value;
    }
    return out;
  }

  it('the table is the definition computed from the set of events', () => {
    for (let seed = 1; seed <= 300; seed++) {
      const events = randomEvents(seed);
      const actual = tableFields(applyAll(events));
      expect(actual === null || actual === undefined ? actual : { ...actual }, `seed ${seed}`).toEqual(
        reference(events),
      );
    }
  });

  it('reports a table change exactly when the table row changes, its newest delivery included', () => {
    for (let seed = 1; seed <= 100; seed++) {
      let state: EntityState | undefined;
      for (const e of randomEvents(seed)) {
        const before = latestValue(state);
        const result = applyEvent(state, e);
        expect(result.tableChanged, `seed ${seed}`).toBe(
          JSON.stringify(before) !== JSON.stringify(latestValue(result.state)),
        );
        state = result.state;
      }
    }
  });

  it('the last row emitted is the same whatever order the events arrive in', () => {
    for (let seed = 1; seed <= 100; seed++) {
      const lastRow = (events: readonly MergeEvent[]) => {
        let state: EntityState | undefined;
        let emitted: EntityLatest | null | undefined;
        for (const e of events) {
          const result = applyEvent(state, e);
          if (result.tableChanged) emitted = latestValue(result.state);
          state = result.state;
        }
        return emitted;
      };
      const events = randomEvents(seed);
      expect(lastRow([...events].reverse()), `seed ${seed}`).toEqual(lastRow(events));
    }
  });
});
