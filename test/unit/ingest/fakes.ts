// Unit-test stand-ins for ingest's ports: a producer whose acknowledgements the test controls, an encoder
// that keeps envelopes in memory. Integration tests use the real broker and registry instead.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import type { EnvelopeEncoder } from '../../../ingest/producer/encoder.js';
import type {
  ConnectProducer,
  ProducerPort,
  RawRecord,
  RecordOutcomes,
} from '../../../ingest/producer/port.js';
import type { Logger } from '../../../runtime/log.js';
import type { RawEnvelope } from '../../../schemas/raw-envelope.js';

export type SendBehaviour = 'ack' | 'fail' | 'hang' | 'manual';

export class FakeKafka {
  /** Records acknowledged, in order. */
  readonly acked: RawRecord[] = [];
  readonly sends: RawRecord[][] = [];
  behaviour: SendBehaviour = 'ack';
  /** The broker's refusal of one record (its partition under min.insync.replicas, too large), else undefined. */
  refuse: (record: RawRecord) => Error | undefined = () => undefined;
  connectFails = false;
  connects = 0;
  closes = 0;
  /** Each connected producer's way to report that it broke by itself (a fatal error), latest last. */
  readonly failed: Array<(error: Error) => void> = [];
  private manual: Array<{
    resolve: (outcomes: RecordOutcomes) => void;
    reject: (e: unknown) => void;
    records: RawRecord[];
  }> = [];

  readonly connect: ConnectProducer = async (failed) => {
    this.connects++;
    if (this.connectFails) throw new Error('connection refused');
    this.failed.push(failed);
    const port: ProducerPort = {
      send: (records) => this.send(records),
      close: async () => {
        this.closes++;
      },
    };
    return port;
  };

  /** Acknowledges (or fails) every send waiting in 'manual' mode. */
  release(error?: unknown): void {
    const waiting = this.manual;
    this.manual = [];
    for (const send of waiting) {
      if (error === undefined) send.resolve(this.deliver(send.records));
      else send.reject(error);
    }
  }

  /** Each record's delivery report: acknowledged unless refused. */
  private deliver(records: RawRecord[]): RecordOutcomes {
    return records.map((record) => {
      const refusal = this.refuse(record);
      if (refusal === undefined) this.acked.push(record);
      return refusal;
    });
  }

  private send(records: RawRecord[]): Promise<RecordOutcomes> {
    this.sends.push(records);
    switch (this.behaviour) {
      case 'ack':
        return Promise.resolve(this.deliver(records));
      case 'fail':
        return Promise.reject(new Error('KafkaJSNumberOfRetriesExceeded'));
      case 'hang':
        return new Promise(() => {});
      case 'manual':
        return new Promise((resolve, reject) => this.manual.push({ resolve, reject, records }));
    }
  }
}

/** Encodes an envelope as its ingestId and keeps the envelope, so tests read back exactly what was built. */
export class MemoryEncoder implements EnvelopeEncoder {
  ready = true;
  readonly envelopes = new Map<string, RawEnvelope>();
  async encode(envelope: RawEnvelope): Promise<Buffer> {
    this.envelopes.set(envelope.ingestId, envelope);
    return Buffer.from(envelope.ingestId);
  }
  decode(value: Buffer): RawEnvelope {
    return this.envelopes.get(value.toString())!;
  }
}

/** A pino logger writing into a string the test can search (for secrets that must never appear). */
export function capturingLogger(): { logger: Logger; text: () => string } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      chunks.push(String(chunk));
      done();
    },
  });
  return { logger: pino({ level: 'debug' }, stream), text: () => chunks.join('') };
}

export async function until(check: () => boolean, ms = 3_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 2));
  }
}
