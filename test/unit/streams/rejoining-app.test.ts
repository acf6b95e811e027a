import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { ERRORS, KafkaError } from '../../../runtime/kafka/rdkafka.js';
import { startRejoiningApp } from '../../../runtime/streams/rejoining-app.js';
import type { StreamApp } from '../../../runtime/streams/stream-runner.js';

/** A stream app that stops when told to, with a failure or closed. */
function fakeApp(name: string) {
  let stop!: () => void;
  let failure: Error | undefined;
  const closed = { count: 0 };
  const stopped = new Promise<void>((resolve) => {
    stop = resolve;
  });
  const app: StreamApp = {
    isReady: () => true,
    readiness: () => ({ ready: true, reasons: [name] }),
    tasks: () => [],
    stopped,
    failure: () => failure,
    async close() {
      closed.count++;
      stop();
    },
  };
  return {
    app,
    closed,
    fail(error: Error) {
      failure = error;
      stop();
    },
  };
}

const fatal = () =>
  new KafkaError(Object.assign(new Error('Local: Fatal error'), { code: ERRORS.ERR__FATAL }), 'consume');
const authentication = () =>
  new KafkaError(
    Object.assign(new Error('SASL authentication error'), { code: ERRORS.ERR__AUTHENTICATION }),
    'connect',
  );
/** INVALID_TXN_STATE with librdkafka's fatal flag, as after a coordinator's restart mid-transaction. */
const producerFailed = () =>
  new KafkaError(
    Object.assign(new Error('Broker: Producer attempted a transactional operation in an invalid state'), {
      code: ERRORS.ERR_INVALID_TXN_STATE,
      isFatal: true,
    }),
    'abortTransaction',
  );
const flush = () => new Promise((r) => setTimeout(r, 0));

function harness(policy = { allowed: 3, windowMs: 600_000 }) {
  const apps: ReturnType<typeof fakeApp>[] = [];
  let clock = 0;
  const start = async () => {
    const next = fakeApp(`app ${apps.length + 1}`);
    apps.push(next);
    return next.app;
  };
  return {
    apps,
    tick: (ms: number) => {
      clock += ms;
    },
    open: () =>
      startRejoiningApp({
        start,
        logger: pino({ level: 'silent' }),
        instanceId: 'i-1',
        policy,
        now: () => clock,
      }),
  };
}

describe('a stream app that rejoins after its consumer is fenced', () => {
  it('starts new clients when the consumer is fenced, and answers for the new app', async () => {
    const h = harness();
    const app = await h.open();
    h.apps[0]!.fail(fatal());
    await flush();
    expect(h.apps).toHaveLength(2);
    expect(app.readiness().reasons).toEqual(['app 2']);
    expect(app.failure()).toBeUndefined();
    await app.close();
    expect(h.apps[1]!.closed.count).toBe(1);
  });

  it('starts new clients when the producer failed for good', async () => {
    const h = harness();
    const app = await h.open();
    h.apps[0]!.fail(producerFailed());
    await flush();
    expect(h.apps).toHaveLength(2);
    expect(app.failure()).toBeUndefined();
    expect(app.readiness().reasons).toEqual(['app 2']);
    await app.close();
  });

  it('stops with the producer failure, not a fencing, once it keeps failing', async () => {
    const h = harness({ allowed: 1, windowMs: 60_000 });
    const app = await h.open();
    h.apps[0]!.fail(producerFailed());
    await flush();
    h.apps[1]!.fail(producerFailed());
    await app.stopped;
    expect(h.apps).toHaveLength(2);
    expect(app.failure()?.message).toBe(
      'clients replaced 1 time in 1 min and failed again: abortTransaction: Broker: Producer attempted a transactional operation in an invalid state',
    );
  });

  it('stops with one line naming the instance id once fencing keeps happening', async () => {
    const h = harness({ allowed: 2, windowMs: 60_000 });
    const app = await h.open();
    for (let i = 0; i < 3; i++) {
      h.apps[i]!.fail(fatal());
      await flush();
      h.tick(1_000);
    }
    await app.stopped;
    expect(h.apps).toHaveLength(3);
    expect(app.failure()?.message).toMatch(
      /^consumer fenced 3 times in 1 min: another instance runs with instance id i-1/,
    );
  });

  it('forgets fencings older than the window', async () => {
    const h = harness({ allowed: 1, windowMs: 60_000 });
    const app = await h.open();
    h.apps[0]!.fail(fatal());
    await flush();
    h.tick(61_000);
    h.apps[1]!.fail(fatal());
    await flush();
    expect(h.apps).toHaveLength(3);
    expect(app.failure()).toBeUndefined();
    await app.close();
  });

  it('stops at once on any other failure', async () => {
    const h = harness();
    const app = await h.open();
    h.apps[0]!.fail(authentication());
    await app.stopped;
    expect(h.apps).toHaveLength(1);
    expect(app.failure()?.message).toMatch(/SASL authentication error/);
  });

  it('stops when closed, starting nothing new', async () => {
    const h = harness();
    const app = await h.open();
    await app.close();
    await app.stopped;
    expect(h.apps).toHaveLength(1);
    expect(h.apps[0]!.closed.count).toBe(1);
  });
});
