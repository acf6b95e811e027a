// Delivery reports routed to the records they belong to: deliverAll's all-or-nothing answer (tools,
// redrive) and deliverEach's answer per record (ingest), on a stand-in for librdkafka's producer.
import type { Producer } from '@confluentinc/kafka-javascript';
import { describe, expect, it } from 'vitest';
import { ERRORS } from '../../../runtime/kafka/rdkafka.js';
import { deliverAll, deliverEach, type OutRecord } from '../../../runtime/kafka/write-records.js';

/** Acknowledges each record in a later tick, unless `refuse` names a broker error for it (or throws). */
function fakeProducer(refuse: (key: string) => { code: number; message: string } | 'throw' | undefined) {
  return {
    produce(
      _topic: string,
      _partition: number | null,
      _value: Buffer | null,
      key: string,
      _timestamp: number | null,
      opaque: (error: unknown) => void,
    ) {
      const refusal = refuse(key);
      if (refusal === 'throw')
        throw Object.assign(new Error('Local: Queue full'), { code: ERRORS.ERR__QUEUE_FULL });
      setTimeout(
        () => opaque(refusal === undefined ? undefined : Object.assign(new Error(refusal.message), refusal)),
        1,
      );
    },
  } as unknown as Producer;
}

const records = (...keys: string[]): OutRecord[] => keys.map((key) => ({ key, value: Buffer.from(key) }));
const notEnoughReplicas = {
  code: ERRORS.ERR_NOT_ENOUGH_REPLICAS,
  message: 'Broker: Not enough in-sync replicas',
};

describe('delivering records', () => {
  it('answers each record from its own delivery report, one refusal failing that record alone', async () => {
    const producer = fakeProducer((key) =>
      key === 'p7' ? notEnoughReplicas : key === 'full' ? 'throw' : undefined,
    );
    const outcomes = await deliverEach(producer, 'raw', records('a', 'p7', 'b', 'full'));
    expect(outcomes[0]).toBeUndefined();
    expect(outcomes[1]).toMatchObject({ code: ERRORS.ERR_NOT_ENOUGH_REPLICAS });
    expect(outcomes[2]).toBeUndefined();
    expect(outcomes[3]).toMatchObject({ code: ERRORS.ERR__QUEUE_FULL });
    expect(await deliverEach(producer, 'raw', [])).toEqual([]);
  });

  it('keeps deliverAll all-or-nothing: it rejects when any record fails, once every report is in', async () => {
    const producer = fakeProducer((key) => (key === 'p7' ? notEnoughReplicas : undefined));
    await expect(deliverAll(producer, 'raw', records('a', 'p7', 'b'))).rejects.toMatchObject({
      code: ERRORS.ERR_NOT_ENOUGH_REPLICAS,
    });
    await deliverAll(producer, 'raw', records('a', 'b'));
    await deliverAll(producer, 'raw', []);
  });
});
