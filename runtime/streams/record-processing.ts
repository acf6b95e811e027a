// One consumed record through its task: deserialized, processed, its outputs and changelog writes
// size-checked, serialized and sent in the open transaction; a record that cannot be processed goes to
// the topology's dead-letter sink. A record whose processing throws is remembered: after
// RECORD_ATTEMPTS deterministic failures over DEAD_LETTER_AFTER_MS it is dead-lettered instead of tried again.
import { errorFields } from '../log-error.js';
import type { OutRecord } from './eos-producer.js';
import { classifyRecordError, DEAD_LETTER_AFTER_MS, isRegistryAnswer, RECORD_ATTEMPTS } from './errors.js';
import type { InputRecord } from './processor.js';
import { RepeatedLines } from './repeated-lines.js';
import type { ConsumedMessage } from './stream-clients.js';
import type { Outgoing, RecordFailure, StreamTask } from './stream-task.js';
import type { SinkNode, SourceMessage, SourceNode, Topology } from './topology.js';
import type { TransactionCycle } from './transaction-cycle.js';

/** Kafka's per-record and per-batch overhead, with room: what a record adds to max.message.bytes. */
const RECORD_OVERHEAD_BYTES = 128;
const DEFAULT_MAX_MESSAGE_BYTES = 1_048_588;

class OutputTooLargeError extends Error {
  override name = 'OutputTooLargeError';
}

function recordBytes(record: OutRecord): number {
  let size = RECORD_OVERHEAD_BYTES + (record.key?.length ?? 0) + (record.value?.length ?? 0);
  for (const [name, value] of Object.entries(record.headers ?? {}))
    size += name.length + Buffer.byteLength(value);
  return size;
}

/** A record whose processing threw, and how often it did (deterministic failures only). */
interface FailingRecord {
  offset: number;
  attempts: number;
  /** When its first failure was. */
  firstAt: number;
  /** Where it failed: before a value existed (deserialize), or after. */
  stage: 'deserialize' | 'process';
  error: unknown;
}

export class RecordProcessing<V> {
  readonly #sources: Map<string, SourceNode<V>>;
  readonly #sinks: Map<string, SinkNode>;
  /**
   * Per task, the records that failed deterministically, by offset. More than one: a record given up on
   * stays given up on until a commit moves past it, though the next one's failure aborts its dead letter
   * (with one entry a task, the two reset each other's attempts and the partition never moved again).
   */
  readonly #failing = new WeakMap<StreamTask<V>, Map<number, FailingRecord>>();
  /** Dead-letter lines of one kind (reason and error class): one in full per minute, the rest at debug. */
  readonly #repeats = new RepeatedLines();
  /** The record being processed, what a throw out of `process` is blamed on (fields, not an object per record). */
  #inFlightTask: StreamTask<V> | undefined;
  #inFlightOffset = 0;
  #inFlightStage: FailingRecord['stage'] = 'deserialize';

  constructor(
    private readonly topology: Topology<V>,
    /** Each sink and changelog topic's max.message.bytes. */
    private readonly limits: ReadonlyMap<string, number>,
    private readonly cycle: TransactionCycle<V>,
    /** A record failing deterministically is dead-lettered no sooner than this after its first failure. */
    private readonly deadLetterAfterMs = DEAD_LETTER_AFTER_MS,
  ) {
    this.#sources = new Map(topology.sources.map((s) => [s.topic, s]));
    this.#sinks = new Map(topology.sinks.map((s) => [s.name, s]));
  }

  /** A changelog record's key and value may take this much of its topic's limit (made once, not per record). */
  readonly #changelogLimit = (topic: string): number => this.#limitOf(topic) - RECORD_OVERHEAD_BYTES;

  #limitOf(topic: string): number {
    return this.limits.get(topic) ?? DEFAULT_MAX_MESSAGE_BYTES;
  }

  #checkSize(task: StreamTask<V>, record: OutRecord): void {
    const limit = this.#limitOf(record.topic);
    const size = recordBytes(record);
    if (size > limit)
      throw new OutputTooLargeError(
        `a record of ${size} bytes to ${record.topic} exceeds its max.message.bytes ${limit} (${task.topic}[${task.partition}])`,
      );
  }

  /**
   * The outputs as records to send: at once when every sink serialized its value at once (its schema is
   * cached), so the common record waits for no promise and no microtask; else a promise.
   */
  #serialize(task: StreamTask<V>, outputs: readonly Outgoing[]): OutRecord[] | Promise<OutRecord[]> {
    const out: OutRecord[] = [];
    for (let n = 0; n < outputs.length; n++) {
      const o = outputs[n]!;
      const value = o.value === null ? null : o.sink.serialize(o.value);
      if (value instanceof Promise) return this.#serializeFrom(task, outputs, n, value, out);
      out.push(this.#outRecord(task, o, value));
    }
    return out;
  }

  /** #serialize from output `n` on, whose value is still being serialized. */
  async #serializeFrom(
    task: StreamTask<V>,
    outputs: readonly Outgoing[],
    n: number,
    pending: Promise<Buffer>,
    out: OutRecord[],
  ): Promise<OutRecord[]> {
    out.push(this.#outRecord(task, outputs[n]!, await pending));
    for (const o of outputs.slice(n + 1)) {
      const value = o.value === null ? null : o.sink.serialize(o.value);
      out.push(this.#outRecord(task, o, value instanceof Promise ? await value : value));
    }
    return out;
  }

  #outRecord(task: StreamTask<V>, o: Outgoing, value: Buffer | null): OutRecord {
    const record: OutRecord = {
      topic: o.sink.topic,
      partition: o.partition,
      key: Buffer.from(o.key, 'utf8'),
      value,
      timestamp: o.timestamp,
      headers: o.headers,
    };
    this.#checkSize(task, record);
    return record;
  }

  /** The record's changelog writes fit their topic (checked now: at commit they would fail every retry). */
  #checkChangelog(task: StreamTask<V>): void {
    const over = task.changelogOverLimit(this.#changelogLimit);
    if (over !== undefined)
      throw new OutputTooLargeError(
        `a record of ${over.bytes + RECORD_OVERHEAD_BYTES} bytes to ${over.topic} exceeds its max.message.bytes ${over.limit + RECORD_OVERHEAD_BYTES} (${task.topic}[${task.partition}])`,
      );
  }

  /** A record that cannot be processed goes to the topology's dead-letter sink (or is skipped and counted). */
  async #deadLetter(task: StreamTask<V>, record: InputRecord<V>, why: RecordFailure): Promise<void> {
    task.undoRecord();
    const hook = this.topology.deadLetter;
    const labels = { topic: task.topic, reason: why.reason };
    // `recordKey`, not `key`: the logger redacts `key` fields (they carry signing keys elsewhere).
    const line = { offset: record.offset, recordKey: record.key, reason: why.reason };
    const { full, heldBack } = this.#repeats.admit(`${why.reason}:${(why.error as Error | undefined)?.name}`);
    if (full)
      task.log.warn(
        { ...errorFields(why.error), ...line, ...(heldBack > 0 ? { heldBack } : {}) },
        heldBack > 0
          ? `record dead-lettered (and ${heldBack} more like it since the last line)`
          : 'record dead-lettered',
      );
    else task.log.debug({ ...line, err: (why.error as Error | undefined)?.message }, 'record dead-lettered');
    if (hook === undefined) {
      task.addEvent('stream.skipped', labels);
      return;
    }
    const sink = this.#sinks.get(hook.sink);
    if (sink === undefined) throw new TypeError(`no sink named ${hook.sink} in ${this.topology.name}`);
    let serialized: OutRecord[];
    try {
      const { result } = task.withContext(record, (context) => hook.build(record, why, context));
      this.#checkChangelog(task);
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
      if (classifyRecordError(error) === 'transient') throw error;
      task.undoRecord();
      task.log.error(
        { err: error, offset: record.offset },
        'the dead letter itself cannot be written; record skipped',
      );
      task.addEvent('stream.skipped', labels);
      return;
    }
    for (const r of serialized) await this.cycle.send(r);
    task.keepRecord();
    task.addEvent('stream.dead-letter', labels);
  }

  /**
   * The cycle failed with `error`: if a record was being processed and the error is deterministic, that
   * record is charged one attempt. Returns its attempts so far (0: not a record's failure), and whether
   * the next cycle dead-letters it.
   */
  blame(error: unknown, now = Date.now()): { attempts: number; givingUp: boolean } {
    const task = this.#inFlightTask;
    this.#inFlightTask = undefined;
    if (task === undefined || classifyRecordError(error) === 'transient')
      return { attempts: 0, givingUp: false };
    let records = this.#failing.get(task);
    if (records === undefined) {
      records = new Map();
      this.#failing.set(task, records);
    }
    // Records a commit moved past (dead-lettered) will not come again.
    const committed = task.position.committed;
    if (committed !== undefined)
      for (const offset of records.keys()) if (offset < committed) records.delete(offset);
    const earlier = records.get(this.#inFlightOffset);
    const failing: FailingRecord = {
      offset: this.#inFlightOffset,
      attempts: (earlier?.attempts ?? 0) + 1,
      firstAt: earlier?.firstAt ?? now,
      stage: this.#inFlightStage,
      error,
    };
    records.set(failing.offset, failing);
    return { attempts: failing.attempts, givingUp: this.#outOfAttempts(failing, now) };
  }

  /**
   * RECORD_ATTEMPTS attempts, over at least `deadLetterAfterMs` since the first: a registry that is
   * starting answers "not found" for a schema it has not read back yet, for a moment.
   */
  #outOfAttempts(failing: FailingRecord, now = Date.now()): boolean {
    return failing.attempts >= RECORD_ATTEMPTS && now - failing.firstAt >= this.deadLetterAfterMs;
  }

  /** Hands each source that reads ahead the batch's records it will be asked to deserialize. */
  readAhead(batch: readonly { task: StreamTask<V>; message: ConsumedMessage }[]): void {
    const bySource = new Map<SourceNode<V>, SourceMessage[]>();
    for (const { task, message } of batch) {
      const offset = message.offset;
      if (!task.position.isNew(offset)) continue;
      const source = this.#sources.get(task.topic)!;
      if (source.readAhead === undefined) continue;
      const list = bySource.get(source) ?? [];
      if (list.length === 0) bySource.set(source, list);
      list.push(sourceMessage(task, message, offset));
    }
    for (const [source, messages] of bySource) source.readAhead!(messages);
  }

  /** Processes one consumed record of a running task in the open transaction (begun now if none is). */
  async process(task: StreamTask<V>, message: ConsumedMessage): Promise<void> {
    const offset = message.offset;
    // Fetched before a rewind, or before the partition's start was known: already done, or fetched again.
    if (!task.position.isNew(offset)) return;
    const failing = this.#failing.get(task)?.get(offset);
    if (failing !== undefined && this.#outOfAttempts(failing)) {
      await this.#giveUp(task, message, failing);
      return;
    }
    this.#inFlightTask = task;
    this.#inFlightOffset = offset;
    this.#inFlightStage = 'deserialize';
    const deserialized = this.#sources.get(task.topic)!.deserialize(sourceMessage(task, message, offset));
    // A value at once (the schema is cached) is not awaited: no microtask per record.
    const value = deserialized instanceof Promise ? await deserialized : deserialized;
    this.#inFlightStage = 'process';
    const record = inputRecord(task, message, offset, value);
    if (!this.cycle.inTransaction) await this.cycle.begin();
    this.cycle.counted();
    const result = task.process(record, offset);
    if ('failure' in result) {
      await this.#deadLetter(task, record, result.failure);
    } else {
      let serialized: OutRecord[] | undefined;
      try {
        this.#checkChangelog(task);
        const records = this.#serialize(task, result.outputs);
        serialized = records instanceof Promise ? await records : records;
      } catch (error) {
        // A registry's answer while encoding an output is retried as a failure of the record (attempts,
        // then dead-lettered), never dead-lettered at the first one: the schema itself was found at start.
        if (classifyRecordError(error) === 'transient' || isRegistryAnswer(error)) throw error;
        const reason = error instanceof OutputTooLargeError ? 'output-too-large' : 'processor-error';
        await this.#deadLetter(task, record, { reason, message: (error as Error).message, error });
      }
      if (serialized !== undefined) {
        for (const r of serialized) {
          // A producer that took the record at once answers nothing to wait for.
          const sending = this.cycle.send(r);
          if (sending !== undefined) await sending;
        }
        task.keepRecord();
      }
    }
    this.#inFlightTask = undefined;
    if (failing !== undefined) this.#failing.get(task)?.delete(offset);
  }

  /**
   * A record failed deterministically RECORD_ATTEMPTS times: it is dead-lettered with the last error, and
   * its partition goes on. One that failed before it had a value is handed to the dead-letter hook as
   * the source's poison value (or skipped and counted, with an error line, where the source has none).
   */
  async #giveUp(task: StreamTask<V>, message: ConsumedMessage, failing: FailingRecord): Promise<void> {
    // Its entry stays (blame() drops it once a commit is past it): should this transaction abort, the
    // record is given up on again at once rather than tried RECORD_ATTEMPTS times more.
    const text = failing.error instanceof Error ? failing.error.message : String(failing.error);
    const why: RecordFailure = {
      reason: 'processor-error',
      message: `failed ${failing.attempts} times: ${text}`,
      error: failing.error,
    };
    const source = this.#sources.get(task.topic)!;
    await this.cycle.begin();
    this.cycle.counted();
    task.position.processed(failing.offset);
    // Dead-lettering undoes "the record begun last": without this that is the record before it in the
    // transaction, whose outputs are sent, and its state writes would be dropped while they commit.
    task.beginRecord();
    const bytes = sourceMessage(task, message, failing.offset);
    let value: V;
    if (failing.stage === 'process') {
      try {
        value = await source.deserialize(bytes);
      } catch (error) {
        if (classifyRecordError(error) === 'transient') throw error;
        return this.#skip(task, failing, why);
      }
    } else if (source.poison !== undefined) {
      try {
        value = source.poison(bytes, why.message);
      } catch {
        return this.#skip(task, failing, why);
      }
    } else {
      return this.#skip(task, failing, why);
    }
    await this.#deadLetter(task, inputRecord(task, message, failing.offset, value), why);
  }

  #skip(task: StreamTask<V>, failing: FailingRecord, why: RecordFailure): void {
    task.log.error(
      { ...errorFields(failing.error), offset: String(failing.offset), attempts: failing.attempts },
      'record failed every attempt and has no dead letter; skipped',
    );
    task.addEvent('stream.skipped', { topic: task.topic, reason: why.reason });
  }
}

/**
 * The key as bytes: the consumer's Buffer (not a copy per record; a slice of its batch's block with the
 * binding's patch, so not kept past the transaction), or a string key's UTF-8.
 */
function keyBytes(message: ConsumedMessage): Buffer | null {
  const key = message.key;
  if (key === undefined || key === null) return null;
  return typeof key === 'string' ? Buffer.from(key, 'utf8') : key;
}

function sourceMessage<V>(task: StreamTask<V>, message: ConsumedMessage, offset: number): SourceMessage {
  return {
    topic: task.topic,
    partition: task.partition,
    offset: String(offset),
    key: keyBytes(message),
    value: message.value ?? null,
    timestamp: message.timestamp ?? 0,
  };
}

function inputRecord<V>(
  task: StreamTask<V>,
  message: ConsumedMessage,
  offset: number,
  value: V,
): InputRecord<V> {
  const headers: Record<string, string> = {};
  for (const header of message.headers ?? []) {
    for (const [name, v] of Object.entries(header))
      headers[name] = Buffer.isBuffer(v) ? v.toString('utf8') : String(v);
  }
  const key = message.key;
  return {
    topic: task.topic,
    partition: task.partition,
    offset: String(offset),
    key: key === undefined || key === null ? null : typeof key === 'string' ? key : key.toString('utf8'),
    value,
    timestamp: message.timestamp ?? 0,
    headers,
  };
}
