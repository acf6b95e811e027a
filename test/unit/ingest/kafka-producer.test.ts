// The librdkafka adapter of ingest's producer port, on a stand-in for the binding's producer: each record
// answered from its own delivery report.
import { EventEmitter } from 'node:events';
import type { Producer } from '@confluentinc/kafka-javascript';
import { describe, expect, it } from 'vitest';
import { kafkaProducerConnector } from '../../../ingest/producer/kafka-producer.js';
import type { RawRecord } from '../../../ingest/producer/port.js';
import { ERRORS } from '../../../runtime/kafka/rdkafka.js';
import { capturingLogger } from './fakes.js';

/** Acknowledges each record in a later tick, unless `refuse` gives a broker error for its key (or throws one). */
class FakeRdProducer extends EventEmitter {
  refuse: (key: string) => Error | undefined = () => undefined;
  throwOnProduce: Error | undefined;
  connected = false;
  connect(_options: unknown, done: (error: Error | null) => void) {
    this.connected = true;
    done(null);
  }
  isConnected() {
    return this.connected;
  }
  setPollInBackground() {}
  flush(_timeoutMs: number, done: (error: Error | null) => void) {
    done(null);
  }
  disconnect(_timeoutMs: number, done: () => void) {
    this.connected = false;
    done();
  }
  produce(
    _topic: string,
    _partition: number | null,
    _value: Buffer,
    key: string,
    _timestamp: number,
    opaque: unknown,
  ) {
    if (this.throwOnProduce) throw this.throwOnProduce;
    const refusal = this.refuse(key);
    setTimeout(() => this.emit('delivery-report', refusal ?? null, { opaque }), 1);
  }
}

function connector(client: FakeRdProducer) {
  return kafkaProducerConnector({
    settings: { brokers: ['127.0.0.1:1'], clientId: 'test', logger: capturingLogger().logger },
    topic: 'webhooks.raw',
    deliveryTimeoutMs: 1_000,
    maxMessageBytes: 1_048_576,
    createClient: () => client as unknown as Producer,
  });
}

const records = (...keys: string[]): RawRecord[] =>
  keys.map((key) => ({ key, value: Buffer.from(key), timestamp: Date.now() }));

describe('kafka producer adapter', () => {
  it('answers each record from its own delivery report: a record the broker refused fails alone', async () => {
    const client = new FakeRdProducer();
    client.refuse = (key) =>
      key === 'on-p7'
        ? Object.assign(new Error('Broker: Not enough in-sync replicas'), {
            code: ERRORS.ERR_NOT_ENOUGH_REPLICAS,
          })
        : undefined;
    const port = await connector(client)();
    const outcomes = await port.send(records('a', 'on-p7', 'b'));
    expect(outcomes[0]).toBeUndefined();
    expect(outcomes[1]).toMatchObject({ code: ERRORS.ERR_NOT_ENOUGH_REPLICAS });
    expect(outcomes[2]).toBeUndefined();
    await port.close();
  });
});
