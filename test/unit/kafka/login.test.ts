// Waiting for the login with short metadata requests: a refusal leaves none of them running.
import { describe, expect, it, vi } from 'vitest';
import { awaitLogin, isLoginRefused } from '../../../runtime/kafka/login.js';
import { ERRORS, KafkaError, type RdAdminClient } from '../../../runtime/kafka/rdkafka.js';
import { AUTHENTICATION_FAILED, TLS_FAILED } from '../../../runtime/kafka/security-failures.js';

type MetadataCallback = (error: { message: string; code: number } | null, metadata?: unknown) => void;

/** A client whose metadata requests answer as `answer` says, after `ms`; it records each request's timeout. */
function fakeClient(answer: (attempt: number) => 'ok' | 'timeout', ms = 5) {
  const timeouts: number[] = [];
  let running = 0;
  const client = {
    getMetadata({ timeout }: { timeout: number }, callback: MetadataCallback) {
      timeouts.push(timeout);
      running++;
      const attempt = timeouts.length;
      setTimeout(() => {
        running--;
        if (answer(attempt) === 'ok') callback(null, { brokers: [], topics: [] });
        else callback({ message: 'Local: Broker transport failure', code: ERRORS.ERR__TRANSPORT });
      }, ms);
    },
  };
  return { client: client as unknown as RdAdminClient, timeouts, running: () => running };
}

const never = () => new Promise<never>(() => {});

function refusal() {
  return new KafkaError(
    Object.assign(new Error('SASL authentication error'), { code: AUTHENTICATION_FAILED }),
  );
}

describe('waiting for the login', () => {
  it('asks again with short requests until the cluster answers', async () => {
    const { client, timeouts } = fakeClient((attempt) => (attempt < 3 ? 'timeout' : 'ok'));
    await awaitLogin(client, never(), { timeoutMs: 10_000, probeMs: 500 });
    expect(timeouts).toEqual([500, 500, 500]);
  });

  it('fails with the refusal, once its own request is over', async () => {
    const { client, running } = fakeClient(() => 'timeout', 50);
    let refuse: (error: KafkaError) => void = () => {};
    const refused = new Promise<never>((_, reject) => {
      refuse = reject;
    });
    const login = awaitLogin(client, refused, { timeoutMs: 10_000, probeMs: 500 });
    setTimeout(() => refuse(refusal()), 10);
    await expect(login).rejects.toThrow('SASL authentication error');
    expect(running()).toBe(0);
  });

  it('asks at most once per probe time when requests fail at once (no spin while no broker is up)', async () => {
    // On a fake clock: on a loaded machine real timers fire late, and the count would measure the load.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    try {
      const { client, timeouts } = fakeClient(() => 'timeout', 1);
      const login = awaitLogin(client, never(), { timeoutMs: 500, probeMs: 100 });
      const failed = expect(login).rejects.toThrow('Broker transport failure');
      await vi.advanceTimersByTimeAsync(600);
      await failed;
      // One request at 0, 100, 200, 300 and 400 ms, each failing after 1 ms, none in between; a last one
      // at the deadline with what is left (at least 1 ms), whose error is the one given.
      expect(timeouts).toEqual([100, 100, 100, 100, 100, 1]);
    } finally {
      vi.useRealTimers();
    }
  });

  it("gives up after the timeout with the last request's error", async () => {
    const { client, timeouts } = fakeClient(() => 'timeout', 20);
    await expect(awaitLogin(client, never(), { timeoutMs: 100, probeMs: 40 })).rejects.toThrow(
      'connect: Local: Broker transport failure',
    );
    expect(timeouts.length).toBeGreaterThan(1);
    expect(Math.max(...timeouts)).toBeLessThanOrEqual(40);
  });
});

describe('a refused login', () => {
  it('is wrong credentials or an untrusted certificate, nothing a retry could fix', () => {
    expect(isLoginRefused(refusal())).toBe(true);
    expect(isLoginRefused(new KafkaError(Object.assign(new Error('ssl'), { code: TLS_FAILED })))).toBe(true);
    const transport = new KafkaError(Object.assign(new Error('transport'), { code: ERRORS.ERR__TRANSPORT }));
    expect(isLoginRefused(transport)).toBe(false);
    expect(isLoginRefused(new Error('SASL authentication error'))).toBe(false);
  });
});
