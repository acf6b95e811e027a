// What the stream runner's unit tests share: a small forwarding topology over a fake Kafka, librdkafka
// errors as the client reports them, a wait on a condition, and apps closed after each test.
import { pino } from 'pino';
import { ERRORS, KafkaError } from '../../../runtime/kafka/rdkafka.js';
import type { InputRecord, Processor, ProcessorContext } from '../../../runtime/streams/processor.js';
import { ChangelogKeyValueStore, MapBacking } from '../../../runtime/streams/store.js';
import {
  type StreamApp,
  type StreamAppOptions,
  startStreamApp,
} from '../../../runtime/streams/stream-runner.js';
import type { Topology } from '../../../runtime/streams/topology.js';
import type { FakeKafka } from './fake-stream-clients.js';

export const codec = {
  encode: (v: number) => Buffer.from(String(v)),
  decode: (b: Buffer) => Number(b.toString()),
};

/** Remembers each key's last value and forwards every record. */
export class Forwarding implements Processor<number> {
  /** Subclasses forward and write through it too. */
  protected context!: ProcessorContext;
  init(context: ProcessorContext) {
    this.context = context;
  }
  process(record: InputRecord<number>) {
    this.context
      .getStore<ChangelogKeyValueStore<number>>('last')
      .put(record.key!, record.value, record.timestamp);
    this.context.forward('out', record.key!, record.value);
  }
}

export const topology: Topology<number> = {
  name: 't',
  sources: [{ topic: 'in', deserialize: async ({ value }) => Number(value?.toString()) }],
  processor: { name: 'forward', create: () => new Forwarding() },
  stores: [
    {
      name: 'last',
      changelogTopic: () => 'in-changelog',
      create: () => new ChangelogKeyValueStore<number>('last', new MapBacking<number>(), codec),
    },
  ],
  sinks: [{ name: 'out', topic: 'out', serialize: (v) => Buffer.from(String(v)) }],
};

export const rd = (
  code: number,
  message = `code ${code}`,
  flags: { isFatal?: boolean; isRetriable?: boolean; isTxnRequiresAbort?: boolean } = {},
) => new KafkaError(Object.assign(new Error(message), { code, ...flags }));
/** What librdkafka answered an abort once the coordinator was back from a restart mid-transaction. */
export const invalidTxnState = () =>
  rd(
    ERRORS.ERR_INVALID_TXN_STATE,
    'Broker: Producer attempted a transactional operation in an invalid state',
    {
      isFatal: true,
    },
  );
export const p0 = { topic: 'in', partition: 0 };
export const p1 = { topic: 'in', partition: 1 };

export async function until(check: () => boolean, what: string, timeoutMs = 3_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

export const apps: StreamApp[] = [];
/** Closes every app `start` made: each test file's afterEach. */
export async function closeApps(): Promise<void> {
  for (const app of apps.splice(0)) await app.close();
}

export async function start(
  kafka: FakeKafka,
  options: Partial<StreamAppOptions<number>> = {},
): Promise<StreamApp> {
  const app = await startStreamApp<number>({
    kafka: { brokers: ['fake:9092'], clientId: 'unit', logger: pino({ level: 'silent' }) },
    topology,
    appId: 'app',
    instanceId: 'i1',
    logger: pino({ level: 'silent' }),
    clients: kafka.clients,
    restore: kafka.restore,
    restoreRetryInitialMs: 20,
    restoreRetryMaxMs: 200,
    ...options,
  });
  apps.push(app);
  return app;
}
