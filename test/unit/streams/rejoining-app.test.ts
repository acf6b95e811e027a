import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { BrokersUnreachableError } from '../../../runtime/kafka/describe-configs.js';
import { ERRORS, KafkaError } from '../../../runtime/kafka/rdkafka.js';
import { type StartRetryDelays, startRejoiningApp } from '../../../runtime/streams/rejoining-app.js';
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
/** What a restart meets while the only broker is still down (DescribeConfigs at the app's start). */
const brokersAway = () =>
  new BrokersUnreachableError(
    'DescribeConfigs: no broker answered (127.0.0.1:9092: connect ECONNREFUSED 127.0.0.1:9092)',
  );
const initTransactionsTimedOut = () =>
  new KafkaError(
    Object.assign(new Error('Local: Timed out'), { code: ERRORS.ERR__TIMED_OUT, isRetriable: true }),
    'initTransactions',
  );

function harness(
  policy = { allowed: 3, windowMs: 600_000 },
  startRetry: StartRetryDelays = { initialMs: 1, maxMs: 4 },
) {
  const apps: ReturnType<typeof fakeApp>[] = [];
  /** Errors the next start attempts throw, in order, before one succeeds. */
  const refusals: Error[] = [];
  let attempts = 0;
  let clock = 0;
  const start = async () => {
    attempts++;
    const refusal = refusals.shift();
    if (refusal !== undefined) throw refusal;
    const next = fakeApp(`app ${apps.length + 1}`);
    apps.push(next);
    return next.app;
  };
  return {
    apps,
    refusals,
    attempts: () => attempts,
    tick: (ms: number) => {
      clock += ms;
    },
    open: () =>
      startRejoiningApp({
        start,
        logger: pino({ level: 'silent' }),
        instanceId: 'i-1',
        policy,
        startRetry,
        now: () => clock,
      }),
  };
}

/** Resolves once `condition` holds, polling the event loop (a few seconds at most). */
async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 2_000 && !condition(); i++) await new Promise((r) => setTimeout(r, 1));
  expect(condition()).toBe(true);
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

  it('starts again once the cluster is back: the new app waits out brokers still away, as one restart', async () => {
    const h = harness({ allowed: 1, windowMs: 600_000 });
    const app = await h.open();
    h.refusals.push(brokersAway(), initTransactionsTimedOut(), brokersAway());
    h.apps[0]!.fail(producerFailed());
    await until(() => h.apps.length === 2);
    expect(h.attempts()).toBe(5);
    expect(app.failure()).toBeUndefined();
    expect(app.readiness().reasons).toEqual(['app 2']);
    // Three refused starts and the fourth that ran are one restart: one more failure uses up `allowed: 1`.
    h.apps[1]!.fail(producerFailed());
    await app.stopped;
    expect(app.failure()?.message).toMatch(/^clients replaced 1 time in 10 min and failed again/);
  });

  it('says why it is not ready while the cluster is out of reach', async () => {
    const h = harness(undefined, { initialMs: 60_000, maxMs: 60_000 });
    const app = await h.open();
    h.refusals.push(brokersAway());
    h.apps[0]!.fail(producerFailed());
    await until(() => h.attempts() === 2);
    expect(app.isReady()).toBe(false);
    expect(app.readiness().reasons).toEqual([
      'starting again with new clients, the cluster out of reach (DescribeConfigs: no broker answered (127.0.0.1:9092: connect ECONNREFUSED 127.0.0.1:9092))',
    ]);
    // Closed during the minute's wait: it stops at once and starts nothing more.
    const closedAt = Date.now();
    await app.close();
    expect(Date.now() - closedAt).toBeLessThan(5_000);
    expect(h.attempts()).toBe(2);
    expect(h.apps).toHaveLength(1);
    expect(app.failure()).toBeUndefined();
  });

  it('stops when a new app is refused for a reason that waiting does not cure', async () => {
    const h = harness();
    const app = await h.open();
    h.refusals.push(brokersAway(), authentication());
    h.apps[0]!.fail(producerFailed());
    await app.stopped;
    expect(h.attempts()).toBe(3);
    expect(app.failure()?.message).toMatch(/SASL authentication error/);
  });
});
