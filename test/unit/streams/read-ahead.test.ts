import { afterEach, describe, expect, it } from 'vitest';
import type { SourceMessage, Topology } from '../../../runtime/streams/topology.js';
import { FakeKafka } from './fake-stream-clients.js';
import { closeApps, p0, p1, start, topology, until } from './runner-fixtures.js';

afterEach(closeApps);

/** The fixtures' topology, its source reading ahead: what it was told, and each value once awaited. */
function readingAhead() {
  const told: string[][] = [];
  const started = new Map<string, Promise<number>>();
  const read = (m: SourceMessage) => Promise.resolve(Number(m.value?.toString()) * 10);
  const t: Topology<number> = {
    ...topology,
    sources: [
      {
        topic: 'in',
        readAhead(messages) {
          told.push(messages.map((m) => `${m.partition}/${m.offset}`));
          for (const m of messages) started.set(`${m.partition}/${m.offset}`, read(m));
        },
        deserialize: (m) =>
          started.get(`${m.partition}/${m.offset}`) ?? Promise.reject(new Error('not read ahead')),
      },
    ],
  };
  return { t, told };
}

describe('a source that reads ahead', () => {
  it("is told each batch's records of running partitions before they are deserialized, in order", async () => {
    const kafka = new FakeKafka();
    kafka.produce('in', 0, [1, 2, 3]);
    kafka.produce('in', 1, [4]);
    const { t, told } = readingAhead();
    await start(kafka, { topology: t });
    kafka.consumer.rebalance('assign', [p0, p1]);
    await until(() => kafka.sent.length === 4, 'four records processed');
    // Every record was read ahead exactly once, and what it read is what was processed.
    expect(told.flat().sort()).toEqual(['0/0', '0/1', '0/2', '1/0']);
    expect(kafka.sent.map((r) => Number(r.value?.toString())).sort((a, b) => a - b)).toEqual([
      10, 20, 30, 40,
    ]);
  });
});
