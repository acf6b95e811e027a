// One consumed record through its task: deserialized, processed, its outputs serialized and sent in
// the open transaction; a record that cannot be processed goes to the topology's dead-letter sink.
import { errorFields } from '../log-error.js';
import type { OutRecord } from './eos-producer.js';
import type { InputRecord } from './processor.js';
import type { ConsumedMessage } from './stream-clients.js';
import type { Outgoing, RecordFailure, StreamTask } from './stream-task.js';
import type { SinkNode, SourceNode, Topology } from './topology.js';
import type { TransactionCycle } from './transaction-cycle.js';

/** Kafka's per-record and per-batch overhead, with room: what a record adds to max.message.bytes. */
const RECORD_OVERHEAD_BYTES = 128;
const DEFAULT_MAX_MESSAGE_BYTES = 1_048_588;

class OutputTooLargeError extends Error {
  override name = 'OutputTooLargeError';
}

/** Whether a serializer's error says the registry could not be asked (retry) rather than a bad value. */
function isTransientSerializeError(error: unknown): boolean {
  const e = error as { code?: unknown; status?: unknown; message?: unknown };
  if (typeof e?.code === 'string') return true;
  if (typeof e?.status === 'number') return e.status >= 500 || e.status === 429;
  return typeof e?.message === 'string' && /fetch failed|network|timeout|socket|ECONN/i.test(e.message);
}

function recordBytes(record: OutRecord): number {
  let size = RECORD_OVERHEAD_BYTES + (record.key?.length ?? 0) + (record.value?.length ?? 0);
  for (const [name, value] of Object.entries(record.headers ?? {}))
    size += name.length + Buffer.byteLength(value);
  return size;
}

export class RecordProcessing<V> {
  readonly #sources: Map<string, SourceNode<V>>;
  readonly #sinks: Map<string, SinkNode>;

  constructor(
    private readonly topology: Topology<V>,
    /** Each sink and changelog topic's max.message.bytes. */
    private readonly limits: ReadonlyMap<string, number>,
    private readonly cycle: TransactionCycle<V>,
  ) {
    this.#sources = new Map(topology.sources.map((s) => [s.topic, s]));
    this.#sinks = new Map(topology.sinks.map((s) => [s.name, s]));
  }

  async #serialize(task: StreamTask<V>, outputs: readonly Outgoing[]): Promise<OutRecord[]> {
    const out: OutRecord[] = [];
    for (const o of outputs) {
      const record: OutRecord = {
        topic: o.sink.topic,
        partition: o.partition,
        key: Buffer.from(o.key, 'utf8'),
        value: o.value === null ? null : await o.sink.serialize(o.value),
        timestamp: o.timestamp,
        headers: o.headers,
      };
      const limit = this.limits.get(record.topic) ?? DEFAULT_MAX_MESSAGE_BYTES;
      const size = recordBytes(record);
      if (size > limit)
        throw new OutputTooLargeError(
          `an output of ${size} bytes to ${record.topic} exceeds its max.message.bytes ${limit} (${task.topic}[${task.partition}])`,
        );
      out.push(record);
    }
    return out;
  }

  /** A record that cannot be processed goes to the topology's dead-letter sink (or is skipped and counted). */
  async #deadLetter(task: StreamTask<V>, record: InputRecord<V>, why: RecordFailure): Promise<void> {
    task.undoRecord();
    const hook = this.topology.deadLetter;
    const labels = { topic: task.topic, reason: why.reason };
    task.log.warn(
      { ...errorFields(why.error), offset: record.offset, key: record.key, reason: why.reason },
      'record dead-lettered',
    );
    if (hook === undefined) {
      task.addEvent('stream.skipped', labels);
      return;
    }
    const sink = this.#sinks.get(hook.sink);
    if (sink === undefined) throw new TypeError(`no sink named ${hook.sink} in ${this.topology.name}`);
    const { result } = task.withContext(record, (context) => hook.build(record, why, context));
    let serialized: OutRecord[];
    try {
      serialized = await this.#serialize(task, [
        {
          sink,
          key: result.key,
          value: result.value,
          partition: sink.copartitioned ? task.partition : undefined,
          timestamp: record.timestamp,
          headers: undefined,
        },
      ]);
    } catch (error) {
      if (isTransientSerializeError(error)) throw error;
      task.undoRecord();
      task.log.error(
        { err: error, offset: record.offset },
        'the dead letter itself cannot be written; record skipped',
      );
      task.addEvent('stream.skipped', labels);
      return;
    }
    for (const r of serialized) await this.cycle.send(r);
    task.addEvent('stream.dead-letter', labels);
  }

  /** Processes one consumed record of a running task in the open transaction (begun now if none is). */
  async process(task: StreamTask<V>, message: ConsumedMessage): Promise<void> {
    const offset = BigInt(message.offset);
    // Fetched before a rewind: already done, or to be fetched again.
    if (task.nextOffset !== undefined && offset < task.nextOffset) return;
    const source = this.#sources.get(task.topic)!;
    const key = message.key === undefined || message.key === null ? null : Buffer.from(message.key);
    const timestamp = message.timestamp ?? 0;
    const value = await source.deserialize({
      topic: task.topic,
      partition: task.partition,
      offset: String(offset),
      key,
      value: message.value ?? null,
      timestamp,
    });
    const headers: Record<string, string> = {};
    for (const header of message.headers ?? []) {
      for (const [name, v] of Object.entries(header))
        headers[name] = Buffer.isBuffer(v) ? v.toString('utf8') : String(v);
    }
    const record: InputRecord<V> = {
      topic: task.topic,
      partition: task.partition,
      offset: String(offset),
      key: key === null ? null : key.toString('utf8'),
      value,
      timestamp,
      headers,
    };
    await this.cycle.begin();
    this.cycle.counted();
    const result = task.process(record, offset);
    if ('failure' in result) {
      await this.#deadLetter(task, record, result.failure);
      return;
    }
    let serialized: OutRecord[];
    try {
      serialized = await this.#serialize(task, result.outputs);
    } catch (error) {
      if (isTransientSerializeError(error)) throw error;
      const reason = error instanceof OutputTooLargeError ? 'output-too-large' : 'processor-error';
      await this.#deadLetter(task, record, { reason, message: (error as Error).message, error });
      return;
    }
    for (const r of serialized) await this.cycle.send(r);
    task.keepRecord();
  }
}
