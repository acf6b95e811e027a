// The readiness probe's client lifecycle: one client across checks, a failed check lets it go, and
// close() lets go of a client even when it was still connecting (else the process outlives ingest).
import type { Producer } from '@confluentinc/kafka-javascript';
import { describe, expect, it } from 'vitest';
import { kafkaProbe } from '../../../ingest/producer/kafka-producer.js';

function fakeClient(metadataError?: Error) {
  let connected = true;
  const client = {
    isConnected: () => connected,
    produce: () => undefined,
    disconnect: (_timeoutMs: number, done: () => void) => {
      connected = false;
      done();
    },
    getMetadata: (_options: unknown, done: (error: Error | null) => void) => done(metadataError ?? null),
  };
  return { client: client as unknown as Producer, connected: () => connected };
}

function deferred<T>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

const options = { settings: { brokers: ['127.0.0.1:1'] } as never, topic: 'webhooks.raw', timeoutMs: 1_000 };

describe('kafkaProbe', () => {
  it('keeps one client across checks and lets it go on close', async () => {
    const clients = [fakeClient()];
    let connects = 0;
    const { probe, close } = kafkaProbe({
      ...options,
      connectClient: async () => clients[connects++]!.client,
    });
    await probe();
    await probe();
    expect(connects).toBe(1);
    await close();
    expect(clients[0]!.connected()).toBe(false);
    await expect(probe()).rejects.toThrow('closed');
  });

  it('shares one check between callers that ask at once', async () => {
    let connects = 0;
    const { probe, close } = kafkaProbe({
      ...options,
      connectClient: async () => {
        connects++;
        return fakeClient().client;
      },
    });
    await Promise.all([probe(), probe(), probe()]);
    expect(connects).toBe(1);
    await close();
  });

  it('lets a client go when its check fails, and connects a new one for the next', async () => {
    const clients = [fakeClient(new Error('no broker answered')), fakeClient()];
    let connects = 0;
    const { probe, close } = kafkaProbe({
      ...options,
      connectClient: async () => clients[connects++]!.client,
    });
    await expect(probe()).rejects.toThrow('no broker answered');
    expect(clients[0]!.connected()).toBe(false);
    await probe();
    expect(connects).toBe(2);
    await close();
    expect(clients[1]!.connected()).toBe(false);
  });

  it('lets go of a client still connecting when close() runs, before close() resolves', async () => {
    const connecting = deferred<Producer>();
    const late = fakeClient();
    const { probe, close } = kafkaProbe({ ...options, connectClient: () => connecting.promise });
    const checked = probe();
    let closed = false;
    const closing = close().then(() => {
      closed = true;
    });
    await new Promise((r) => setTimeout(r, 10));
    expect(closed).toBe(false);
    connecting.resolve(late.client);
    await expect(checked).rejects.toThrow('closed');
    await closing;
    expect(late.connected()).toBe(false);
  });
});
