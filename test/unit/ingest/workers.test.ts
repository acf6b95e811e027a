// The command's side of `ingest --workers N` (ingest/workers.ts over runtime/child-processes.ts): the
// checks of /readyz over workers, a start failure named after its worker, a worker's word to its peers
// passed on to the others only, a worker that ends unasked ending the command, and the quarantine's
// bounds split between the workers.
import { describe, expect, it } from 'vitest';
import { IngestWorkerStartError, IngestWorkers, workerConfig } from '../../../ingest/workers.js';
import { loadConfig } from '../../../runtime/config.js';
import { FakeChild } from '../runtime/fake-child.js';

function workers(count: number) {
  const fakes: FakeChild[] = [];
  const supervisor = new IngestWorkers(count, () => {
    const fake = new FakeChild();
    fakes.push(fake);
    return fake;
  });
  return { supervisor, fakes };
}

const readiness = (webhooks: boolean, producer: boolean, schema: boolean) => ({
  type: 'readiness' as const,
  readiness: { webhooks: { ready: webhooks }, producer: { ready: producer }, schema: { ready: schema } },
});

describe('ingest workers', () => {
  it('are ready for a check only when every worker is', async () => {
    const { supervisor, fakes } = workers(2);
    expect(supervisor.ready('producer')).toBe(false);
    fakes[0]!.say(readiness(true, true, true));
    fakes[1]!.say(readiness(true, false, true));
    for (const fake of fakes) fake.say({ type: 'running' });
    await supervisor.started();
    expect(supervisor.ready('webhooks')).toBe(true);
    expect(supervisor.ready('schema')).toBe(true);
    expect(supervisor.ready('producer')).toBe(false);
    expect(supervisor.readiness('producer').reasons).toEqual([]);
    fakes[1]!.say(readiness(true, true, true));
    expect(supervisor.ready('producer')).toBe(true);
  });

  it('fail to start with the worker’s own failure, named after it', async () => {
    const { supervisor, fakes } = workers(2);
    fakes[0]!.say({ type: 'running' });
    fakes[1]!.say({
      type: 'start-failed',
      error: { message: 'port 8080 is in use (INGEST_PORT)', cluster: false },
    });
    const failure = await supervisor.started().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(IngestWorkerStartError);
    expect((failure as Error).message).toBe('ingest worker 1: port 8080 is in use (INGEST_PORT)');
  });

  it('pass what a worker tells its peers to every other running worker, not back to it', async () => {
    const { supervisor, fakes } = workers(3);
    for (const fake of fakes) fake.say({ type: 'running' });
    await supervisor.started();
    const event = { kind: 'failed', source: 'energy', webhookId: 'wh_1' };
    fakes[0]!.say({ type: 'peer', event });
    expect(fakes[0]!.received).toEqual([]);
    expect(fakes[1]!.received).toEqual([{ type: 'peer', event }]);
    expect(fakes[2]!.received).toEqual([{ type: 'peer', event }]);
    // An ended worker is told nothing.
    fakes[2]!.exit(1);
    fakes[1]!.say({ type: 'peer', event: { ...event, kind: 'stored' } });
    expect(fakes[0]!.received).toEqual([{ type: 'peer', event: { ...event, kind: 'stored' } }]);
    expect(fakes[2]!.received).toEqual([{ type: 'peer', event }]);
  });

  it('end the command when a running worker exits unasked', async () => {
    const { supervisor, fakes } = workers(2);
    for (const fake of fakes) fake.say({ type: 'running' });
    await supervisor.started();
    fakes[1]!.exit(137);
    expect(await supervisor.stopped).toEqual({
      stage: 'webhooks',
      failure: 'ingest worker 1 exited with code 137',
    });
  });

  it('split the quarantine’s bounds between them, so N workers keep no more refused traffic than one', () => {
    const config = loadConfig({
      KAFKA_BROKERS: '127.0.0.1:9092',
      SCHEMA_REGISTRY_URL: 'http://127.0.0.1:8081',
      INGEST_WORKERS: '4',
    });
    const worker = workerConfig(config);
    expect(worker.INGEST_QUARANTINE_PER_SECOND * 4).toBe(config.INGEST_QUARANTINE_PER_SECOND);
    expect(worker.INGEST_QUARANTINE_BYTES_PER_SECOND * 4).toBe(config.INGEST_QUARANTINE_BYTES_PER_SECOND);
    expect(worker.INGEST_QUARANTINE_TOTAL_PER_SECOND * 4).toBe(config.INGEST_QUARANTINE_TOTAL_PER_SECOND);
    expect(worker.INGEST_QUARANTINE_TOTAL_BYTES_PER_SECOND * 4).toBe(
      config.INGEST_QUARANTINE_TOTAL_BYTES_PER_SECOND,
    );
    // Memory bounds stay per worker.
    expect(worker.INGEST_MAX_PENDING_BYTES).toBe(config.INGEST_MAX_PENDING_BYTES);
  });
});
