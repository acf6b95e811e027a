// The librdkafka adapter of ingest's producer port, on a stand-in for the binding's producer: each record
// answered from its own delivery report, and a fatal error (as the binding really emits it) reported at once.
import { EventEmitter } from 'node:events';
import { createRequire } from 'node:module';
import type { Producer } from '@confluentinc/kafka-javascript';
import { describe, expect, it } from 'vitest';
import { kafkaProducerConnector } from '../../../ingest/producer/kafka-producer.js';
import type { RawRecord } from '../../../ingest/producer/port.js';
import { ERRORS } from '../../../runtime/kafka/rdkafka.js';
import { capturingLogger } from './fakes.js';

// The binding's own error class: what lib/client.js wraps an `event.error` in.
const { create: librdkafkaError } = createRequire(import.meta.url)(
  '@confluentinc/kafka-javascript/lib/error.js',
) as { create: (e: Error | number) => Error };

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
    const failures: Error[] = [];
    const port = await connector(client)((error) => failures.push(error));
    const outcomes = await port.send(records('a', 'on-p7', 'b'));
    expect(outcomes[0]).toBeUndefined();
    expect(outcomes[1]).toMatchObject({ code: ERRORS.ERR_NOT_ENOUGH_REPLICAS });
    expect(outcomes[2]).toBeUndefined();
    // A record refused is not the producer failing.
    expect(failures).toEqual([]);
    await port.close();
  });

  it('reports a fatal error at once, as the binding emits it (a plain "Local: Fatal error"), and sends no more', async () => {
    const client = new FakeRdProducer();
    const failures: Error[] = [];
    const port = await connector(client)((error) => failures.push(error));
    const emitted = librdkafkaError(new Error('Local: Fatal error'));
    // What the binding gives: no isFatal flag, no code.
    expect(emitted).toMatchObject({ code: -1 });
    expect((emitted as { isFatal?: boolean }).isFatal).toBeUndefined();
    client.emit('event.error', emitted);
    expect(failures).toHaveLength(1);
    await expect(port.send(records('a'))).rejects.toThrow(/fatal error/i);
    client.emit('event.error', librdkafkaError(new Error('Local: Fatal error')));
    expect(failures).toHaveLength(1);
    await port.close();
  });

  it('lets librdkafka retry what is not fatal (all brokers down) without reporting the producer failed', async () => {
    const client = new FakeRdProducer();
    const failures: Error[] = [];
    const port = await connector(client)((error) => failures.push(error));
    client.emit('event.error', librdkafkaError(new Error('Local: All broker connections are down')));
    client.emit('event.error', librdkafkaError(ERRORS.ERR__TRANSPORT));
    expect(failures).toEqual([]);
    expect(await port.send(records('a'))).toEqual([undefined]);
    await port.close();
  });

  it('reports the producer failed when produce() refuses for a fatal error raised before (ERR__FATAL)', async () => {
    const client = new FakeRdProducer();
    const failures: Error[] = [];
    const port = await connector(client)((error) => failures.push(error));
    client.throwOnProduce = librdkafkaError(ERRORS.ERR__FATAL);
    const outcomes = await port.send(records('a'));
    expect(outcomes[0]).toMatchObject({ code: ERRORS.ERR__FATAL });
    expect(failures).toHaveLength(1);
    await port.close();
  });
});
