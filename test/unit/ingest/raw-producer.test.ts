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
      return kafka.connect(() => undefined);
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
    await until(() => kafka.connects === 2);
    kafka.behaviour = 'ack';
    await p.store(record('b'));
    expect(p.ready).toBe(true);
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

  it('keeps a producer whose every record was refused, but is unready until a write succeeds', async () => {
    const kafka = new FakeKafka();
    const p = producer(kafka.connect);
    await until(() => p.ready);
    kafka.refuse = () => new Error('Broker: Not enough in-sync replicas');
    await expect(p.store(record('a'))).rejects.toMatchObject({ statusCode: 503 });
    expect(p.ready).toBe(false);
    expect(kafka.connects).toBe(1);
    kafka.refuse = () => undefined;
    await p.store(record('b'));
    expect(p.ready).toBe(true);
  });

  it('after replacing a producer whose writes failed, is unready and refuses fast until a write succeeds', async () => {
    const kafka = new FakeKafka();
    const p = producer(kafka.connect, { deadlineMs: 100 });
    await until(() => p.ready);
    kafka.behaviour = 'fail';
    await expect(p.store(record('a'))).rejects.toMatchObject({ code: 'INGEST_ERR_UNAVAILABLE' });
    // Connected again, but connecting is not writing.
    await until(() => kafka.connects === 2);
    await new Promise((r) => setTimeout(r, 20));
    expect(p.ready).toBe(false);
    await new Promise((r) => setTimeout(r, 100));
    // Past a deadline unable to write: one request goes through to try, the others are refused at once.
    kafka.behaviour = 'manual';
    const trial = p.store(record('trial', Date.now() + 5_000));
    await until(() => kafka.sends.length === 2);
    const started = Date.now();
    await expect(p.store(record('b'))).rejects.toMatchObject({ code: 'INGEST_ERR_UNAVAILABLE' });
    expect(Date.now() - started).toBeLessThan(20);
    expect(p.ready).toBe(false);
    kafka.behaviour = 'ack';
    kafka.release();
    await trial;
    expect(p.ready).toBe(true);
    await p.store(record('c'));
    expect(kafka.connects).toBe(2);
  });

  it('backs off between replacements while no write succeeds, and starts afresh after one does', async () => {
    const kafka = new FakeKafka();
    const p = producer(kafka.connect, { reconnectInitialMs: 100, reconnectMaxMs: 200, deadlineMs: 50 });
    await until(() => p.ready);
    kafka.behaviour = 'fail';
    const end = Date.now() + 600;
    while (Date.now() < end) {
      await p.store(record()).catch(() => undefined);
      await new Promise((r) => setImmediate(r));
    }
    // At once, then after 100, 200, 200 ms…: a handful in 600 ms, not one per request.
    expect(kafka.connects).toBeGreaterThanOrEqual(3);
    expect(kafka.connects).toBeLessThanOrEqual(7);
    kafka.behaviour = 'ack';
    // As the platform does: retried until stored (refused at once while between producers).
    const retryEnd = Date.now() + 1_000;
    while (
      !(await p.store(record('ok')).then(
        () => true,
        () => false,
      )) &&
      Date.now() < retryEnd
    )
      await new Promise((r) => setTimeout(r, 5));
    expect(p.ready).toBe(true);
    // A write succeeded: the next replacement is at once again.
    const before = kafka.connects;
    kafka.behaviour = 'fail';
    await p.store(record()).catch(() => undefined);
    await until(() => kafka.connects === before + 1, 80);
  });

  it('keeps a fresh producer at start ready once connected', async () => {
    const kafka = new FakeKafka();
    const p = producer(kafka.connect);
    await until(() => kafka.connects === 1);
    await until(() => p.ready);
    expect(kafka.sends).toHaveLength(0);
  });

  it('replaces a producer that reports a fatal error at once, without waiting for a send', async () => {
    const kafka = new FakeKafka();
    const replaced: string[] = [];
    const p = producer(kafka.connect, { onReplaced: (reason) => replaced.push(reason) });
    await until(() => p.ready);
    kafka.failed[0]!(new Error('producer: fatal error'));
    expect(p.ready).toBe(false);
    expect(replaced).toEqual(['Error: producer: fatal error']);
    await until(() => kafka.connects === 2 && kafka.closes === 1);
    expect(kafka.sends).toHaveLength(0);
    await p.store(record());
    expect(p.ready).toBe(true);
  });

  it("lets only the current producer's outcomes change readiness, not a late success of a replaced one", async () => {
    const kafka = new FakeKafka();
    // The second batch must leave before the first one's time is up (else it goes to the replacement) and be
    // answered before its own is: 300 ms of margin each way, so a loaded machine's pauses do not swap them.
    const p = producer(kafka.connect, { sendTimeoutMs: 600, deadlineMs: 5_000, maxInFlight: 2 });
    await until(() => p.ready);
    kafka.behaviour = 'manual';
    // Two batches in flight on the first producer; the first goes unanswered past its time and replaces it.
    const first = p.store(record('first'));
    await until(() => kafka.sends.length === 1);
    await new Promise((r) => setTimeout(r, 300));
    const second = p.store(record('second'));
    await until(() => kafka.sends.length === 2);
    await expect(first).rejects.toMatchObject({ statusCode: 503 });
    await until(() => kafka.connects === 2);
    expect(p.ready).toBe(false);
    // The replaced producer's second batch is acknowledged within its own time: that request is stored…
    kafka.release();
    await second;
    // …but it says nothing about the producer that writes now.
    expect(p.ready).toBe(false);
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
