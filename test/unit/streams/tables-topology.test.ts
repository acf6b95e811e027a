// The tables topology through the in-memory driver: the fixtures' final tables, idempotence, and
// deletion markers kept for good, whatever stream time does.
import { describe, expect, it } from 'vitest';
import { route } from '../../../processors/dedupe-router/route.js';
import type { EntityLatest } from '../../../processors/tables/merge.js';
import type { EntityInput } from '../../../processors/tables/table-processor.js';
import { tablesTopology } from '../../../processors/tables/topology.js';
import type { Serde } from '../../../schemas/serde.js';
import { TABLE_STREAMS } from '../../../schemas/topics.js';
import { TopologyTestDriver } from '../../helpers/topology-test-driver.js';
import { manifest, storedDeliveries } from '../processors/fixtures.js';

const HOUR = 3_600_000;
const T0 = Date.parse('2026-11-22T09:00:00Z');

function driver() {
  const tables = TABLE_STREAMS.map((stream, i) => ({
    stream,
    source: `entity.${stream}`,
    latest: `entity.${stream}.latest`,
    changelog: `entity.${stream}.merge-changelog`,
    schemaId: i + 1,
  }));
  // The driver pipes decoded values: no bytes are read, so the serde only has to build its reader.
  const serde = { fieldsReader: () => () => undefined } as unknown as Serde;
  return new TopologyTestDriver(tablesTopology({ tables, serde, windowMs: 72 * HOUR }));
}

/** Every entity event the fixtures route to a table stream, in manifest order. */
function events(): { topic: string; key: string; value: EntityInput }[] {
  return storedDeliveries().flatMap(({ envelope }) =>
    route(envelope)
      .outputs.filter((o) => TABLE_STREAMS.some((s) => o.topic === `entity.${s}`))
      .map((o) => ({ topic: o.topic, key: o.key, value: o.value as unknown as EntityInput })),
  );
}

function finalRows(d: ReturnType<typeof driver>): Map<string, Map<string, EntityLatest | null>> {
  const rows = new Map<string, Map<string, EntityLatest | null>>();
  for (const o of d.outputs) {
    const table = rows.get(o.topic) ?? new Map();
    rows.set(o.topic, table);
    table.set(o.key, o.value as EntityLatest | null);
  }
  return rows;
}

describe('the tables topology', () => {
  it('merges the fixtures into the manifest’s finalTables, applying each event twice', () => {
    const d = driver();
    events().forEach((e, i) => {
      d.pipe(e.topic, 0, { key: e.key, value: e.value, timestamp: T0 + i });
      d.pipe(e.topic, 0, { key: e.key, value: e.value, timestamp: T0 + i });
    });
    const rows = finalRows(d);
    for (const [table, expected] of Object.entries(manifest.finalTables)) {
      for (const [key, fields] of Object.entries(expected)) {
        const row = rows.get(table)?.get(key);
        if (fields === null) expect(row, key).toBeNull();
        else expect(Object.fromEntries(Object.keys(fields).map((f) => [f, row?.fields[f]]))).toEqual(fields);
      }
    }
  });

  it('keeps a deletion marker past any stream time, so a late add met after the sweeps cannot resurrect', () => {
    const d = driver();
    const all = events();
    const deletion = all.find((e) => e.value.deleted)!;
    const lateAdd = all.find((e) => e.key === deletion.key && !e.value.deleted)!;
    d.pipe(deletion.topic, 0, { key: deletion.key, value: deletion.value, timestamp: T0 });
    d.pipe(lateAdd.topic, 0, { key: lateAdd.key, value: lateAdd.value, timestamp: T0 + 1 });
    expect(finalRows(d).get(`${deletion.topic}.latest`)?.get(deletion.key)).toBeNull();
    // Stream time moves months past the window (another key's events, as a replay whose raw partitions
    // progress unevenly makes it): the hourly sweeps run, and the marker stays.
    const other = all.find((e) => e.topic === deletion.topic && e.key !== deletion.key)!;
    for (const hours of [80, 81, 2_000, 2_001])
      d.pipe(other.topic, 0, {
        key: other.key,
        value: other.value,
        timestamp: deletion.value.occurredAt + hours * HOUR,
      });
    const log = d.changelogs.get(`${deletion.topic}.merge-changelog/0`)!;
    expect(log.filter((r) => r.key === deletion.key && r.value === null)).toEqual([]);
    // Before, the marker went by then (a changelog tombstone) and this late add brought the entity back.
    d.pipe(lateAdd.topic, 0, { key: lateAdd.key, value: lateAdd.value, timestamp: T0 + 2_002 * HOUR });
    expect(finalRows(d).get(`${deletion.topic}.latest`)?.get(deletion.key)).toBeNull();
  });
});
