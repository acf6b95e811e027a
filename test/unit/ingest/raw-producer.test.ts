import { afterEach, describe, expect, it } from 'vitest';
import type { ConnectProducer, RawRecord } from '../../../ingest/producer/port.js';
import { RawProducer, type RawProducerOptions } from '../../../ingest/producer/raw-producer.js';
import { capturingLogger, FakeKafka, until } from './fakes.js';

const record = (key = 'wh_1', timestamp = Date.now()): RawRecord => ({
  key,
  value: Buffer.from('v'),
  timestamp,
});
const open: RawProducer[] = [];

function producer(connect: ConnectProducer, options: Partial<RawProducerOptions> = {}): RawProducer {
  const p = new RawProducer({
    connect,
    logger: capturingLogger().logger,
    lingerMs: 1,
    maxBatchRecords: 100,
    maxBatchBytes: 1_000_000,
    maxPendingBytes: 1_000_000,
    deadlineMs: 300,
    reconnectInitialMs: 5,
    reconnectMaxMs: 20,
    ...options,
  });
  open.push(p);
  p.start();
  return p;
}

afterEach(async () => {
  await Promise.all(open.splice(0).map((p) => p.close()));
});

describe('raw producer', () => {
  it('keeps trying to connect, with back-off, and turns ready once it can', async () => {
    const kafka = new FakeKafka();
    kafka.connectFails = true;
    const p = producer(kafka.connect);
    await until(() => kafka.connects >= 3);
    expect(p.ready).toBe(false);
    kafka.connectFails = false;
    await until(() => p.ready);
    await p.store(record());
    expect(kafka.acked).toHaveLength(1);
  });

  it('abandons a connection attempt that hangs, and closes it if it connects late', async () => {
    const kafka = new FakeKafka();
    let calls = 0;
    let lateResolve!: () => void;
    let lateClosed = false;
    const connect: ConnectProducer = async () => {
      calls++;
      if (calls === 1) {
        await new Promise<void>((resolve) => {
          lateResolve = resolve;
        });
        return {
          send: async (records) => records.map(() => undefined),
          close: async () => {
            lateClosed = true;
          },
        };
      }
      return kafka.connect();
    };
    const p = producer(connect, { connectTimeoutMs: 50 });
    await until(() => p.ready);
    expect(calls).toBe(2);
    lateResolve();
    await until(() => lateClosed);
  });

  it('replaces a producer whose send does not answer in time, and sends on the new one', async () => {
    const kafka = new FakeKafka();
    const p = producer(kafka.connect, { sendTimeoutMs: 50, deadlineMs: 1_000 });
    await until(() => p.ready);
    kafka.behaviour = 'hang';
    await expect(p.store(record('a'))).rejects.toMatchObject({ statusCode: 503 });
    await until(() => kafka.connects === 2 && p.ready);
    kafka.behaviour = 'ack';
    await p.store(record('b'));
    expect(kafka.acked.map((r) => r.key)).toEqual(['b']);
    expect(kafka.closes).toBe(1);
  });

  it('refuses at once once no producer could write for longer than a deadline', async () => {
    const kafka = new FakeKafka();
    const p = producer(kafka.connect, { deadlineMs: 100 });
    await until(() => p.ready);
    kafka.behaviour = 'fail';
    kafka.connectFails = true;
    await expect(p.store(record())).rejects.toMatchObject({ code: 'INGEST_ERR_UNAVAILABLE' });
    await new Promise((r) => setTimeout(r, 150));
    const started = Date.now();
    await expect(p.store(record())).rejects.toMatchObject({ code: 'INGEST_ERR_UNAVAILABLE' });
    expect(Date.now() - started).toBeLessThan(20);
  });

  it('counts the deadline from when the request arrived (the record timestamp)', async () => {
    const kafka = new FakeKafka();
    const p = producer(kafka.connect, { deadlineMs: 1_000 });
    await until(() => p.ready);
    kafka.behaviour = 'manual';
    const started = Date.now();
    await expect(p.store(record('old', Date.now() - 900))).rejects.toMatchObject({
      code: 'INGEST_ERR_DEADLINE',
    });
    expect(Date.now() - started).toBeLessThan(500);
  });

  it('turns unready when the idle probe fails, and ready again when it passes', async () => {
    const kafka = new FakeKafka();
    let healthy = true;
    const p = producer(kafka.connect, {
      probeIntervalMs: 20,
      probe: async () => {
        if (!healthy) throw new Error('no metadata');
      },
    });
    await until(() => p.ready);
    healthy = false;
    await until(() => !p.ready);
    healthy = true;
    await until(() => p.ready);
  });

  it('answers each request from its own record: one refused gets 503 alone, and the producer is kept', async () => {
    const kafka = new FakeKafka();
    const p = producer(kafka.connect, { lingerMs: 20 });
    await until(() => p.ready);
    kafka.refuse = (r) => (r.key === 'on-p7' ? new Error('Broker: Not enough in-sync replicas') : undefined);
    const keys = ['a', 'b', 'on-p7', 'c'];
    const answers = await Promise.allSettled(keys.map((key) => p.store(record(key))));
    expect(kafka.sends).toHaveLength(1);
    expect(answers.map((a) => a.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    expect((answers[2] as PromiseRejectedResult).reason).toMatchObject({
      code: 'INGEST_ERR_UNAVAILABLE',
      statusCode: 503,
    });
    expect(kafka.acked.map((r) => r.key)).toEqual(['a', 'b', 'c']);
    expect(kafka.connects).toBe(1);
    expect(kafka.closes).toBe(0);
    expect(p.ready).toBe(true);
  });

  it('answers what is queued when closed without a producer, instead of hanging', async () => {
    const kafka = new FakeKafka();
    kafka.connectFails = true;
    const p = producer(kafka.connect, { deadlineMs: 10_000 });
    const pending = p.store(record());
    await new Promise((r) => setTimeout(r, 20));
    const started = Date.now();
    await p.close();
    await expect(pending).rejects.toMatchObject({ statusCode: 503 });
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it('flushes what is queued on close, then disconnects', async () => {
    const kafka = new FakeKafka();
    const p = producer(kafka.connect, { lingerMs: 500 });
    await until(() => p.ready);
    const pending = p.store(record());
    await p.close();
    await pending;
    expect(kafka.acked).toHaveLength(1);
    expect(kafka.closes).toBe(1);
    await expect(p.store(record())).rejects.toMatchObject({ code: 'INGEST_ERR_CLOSING' });
  });
});
