// What the in-process CPU benches (bench:router-cpu, bench:tables-cpu) share: their options, the passes of
// a topology's records through the runtime's RecordProcessing and StreamTasks with a producer that only
// counts, how each pass is timed, and how the passes are summed up (the median pass, and the best one,
// which a busy machine disturbs least) in a line and, with --json, one JSON object on stdout.
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import type { RawInput } from '../../processors/dedupe-router/poison.js';
import { dedupeTopology, ROUTER_OUTPUTS } from '../../processors/dedupe-router/topology.js';
import type { OutRecord } from '../../runtime/streams/eos-producer.js';
import { createStreamMetrics, type EventHandler } from '../../runtime/streams/metrics.js';
import { RecordProcessing } from '../../runtime/streams/record-processing.js';
import type { ConsumedMessage } from '../../runtime/streams/stream-clients.js';
import { StreamTask } from '../../runtime/streams/stream-task.js';
import type { Topology } from '../../runtime/streams/topology.js';
import type { TransactionCycle } from '../../runtime/streams/transaction-cycle.js';
import type { Serde } from '../../schemas/serde.js';
import { topicNames, valueSubject } from '../../schemas/topics.js';
import type { generateLoad } from '../../test/integration/processors-load.js';

const names = topicNames('');

/** The dedupe-router's topology as a stage builds it, on unprefixed topics and the bench registry's ids. */
export function benchRouterTopology(serde: Serde, idOf: ReadonlyMap<string, number>): Topology<RawInput> {
  const schemaIds = new Map<string, number>();
  for (const logical of ROUTER_OUTPUTS) schemaIds.set(logical, idOf.get(valueSubject(logical))!);
  return dedupeTopology({
    rawTopic: names.raw,
    changelogTopic: names.dedupeChangelog,
    topicOf: (logical) => logical,
    schemaIds,
    serde,
    windowMs: 7 * 86_400_000,
  });
}

/** The load's envelopes as consumed `webhooks.raw` records (Avro), round-robin over the partitions. */
export async function rawRecords(
  serde: Serde,
  idOf: ReadonlyMap<string, number>,
  load: ReturnType<typeof generateLoad>,
  partitions: number,
): Promise<ConsumedMessage[]> {
  const rawId = idOf.get(valueSubject(names.raw))!;
  const offsets = new Array<number>(partitions).fill(0);
  const records: ConsumedMessage[] = [];
  for (const [i, envelope] of load.envelopes.entries()) {
    const partition = i % partitions;
    records.push({
      topic: names.raw,
      partition,
      offset: offsets[partition]!++,
      key: Buffer.from(envelope.webhookId),
      value: await serde.encode(rawId, envelope),
      timestamp: envelope.receivedAt,
      size: 0,
    } as unknown as ConsumedMessage);
  }
  return records;
}

export const cpuPassOptions = {
  ids: { type: 'string', default: '60000' },
  retries: { type: 'string', default: '6000' },
  /** Passes over the load (each with new tasks and stores); the median pass counts. */
  passes: { type: 'string', default: '5' },
  /** Records per transaction (the runtime commits at 10,000 records or 100 ms). */
  'commit-records': { type: 'string', default: '2000' },
  json: { type: 'boolean', default: false },
} as const;

export const parseCpuPassArgs = () => parseArgs({ options: cpuPassOptions }).values;

export interface CpuPass {
  eventsPerSecond: number;
  cpuMicrosPerEvent: number;
  outputs: number;
}

const cpuMicros = () => {
  const used = process.cpuUsage();
  return used.user + used.system;
};

/** The passes' span on a --cpu-prof profile's clock (process.hrtime, µs): setup left out of a summary. */
const hrUs = () => Number(process.hrtime.bigint() / 1000n);

/** Times one pass of `events` events (wall and this process's CPU) and logs it. */
async function timePass(index: number, events: number, run: () => Promise<number>): Promise<CpuPass> {
  const startedAt = performance.now();
  const startedCpu = cpuMicros();
  const outputs = await run();
  const seconds = (performance.now() - startedAt) / 1000;
  const cpu = cpuMicros() - startedCpu;
  const pass = { eventsPerSecond: events / seconds, cpuMicrosPerEvent: cpu / events, outputs };
  console.error(
    `pass ${index + 1}: ${pass.eventsPerSecond.toFixed(0)} events/s, ${pass.cpuMicrosPerEvent.toFixed(2)} CPU µs/event, ${outputs} records out`,
  );
  return pass;
}

/** The median pass and the best, as a line and (with `json`) one JSON object, the last line on stdout. */
function reportPasses(
  what: string,
  events: number,
  passes: readonly CpuPass[],
  { json, hrFromUs, hrToUs }: { json: boolean; hrFromUs: number; hrToUs: number },
): void {
  const sorted = [...passes].sort((a, b) => a.cpuMicrosPerEvent - b.cpuMicrosPerEvent);
  const median = sorted[Math.floor(sorted.length / 2)]!;
  // The least CPU of all passes is the figure least disturbed by a busy machine: compare steps by it.
  const best = sorted[0]!;
  console.log(
    `${what} in-process (${events} events, median of ${passes.length} passes): ${median.eventsPerSecond.toFixed(0)} events/s, ${median.cpuMicrosPerEvent.toFixed(2)} CPU µs/event (best pass ${best.cpuMicrosPerEvent.toFixed(2)})`,
  );
  if (json)
    console.log(
      JSON.stringify({
        events,
        eventsPerSecond: median.eventsPerSecond,
        cpuMicrosPerEvent: median.cpuMicrosPerEvent,
        bestCpuMicrosPerEvent: best.cpuMicrosPerEvent,
        outputs: median.outputs,
        hrFromUs,
        hrToUs,
      }),
    );
}

/** A cycle that counts what is sent and commits nothing: the bench's stand-in for the producer. */
export function countingCycle<V>(onSend: (record: OutRecord) => void) {
  let inTransaction = false;
  const cycle = {
    begin: async () => {
      inTransaction = true;
    },
    counted: () => undefined,
    get inTransaction() {
      return inTransaction;
    },
    send: (record: OutRecord) => onSend(record),
  } as unknown as TransactionCycle<V>;
  return { cycle, ended: () => (inTransaction = false) };
}

/** One running task per (source topic, partition), keyed `<topic>/<partition>`. */
export function runningTasks<V>(topology: Topology<V>, partitions: number): Map<string, StreamTask<V>> {
  const logger = pino({ level: 'warn' });
  const port = { pause: () => undefined, resume: () => undefined };
  const tasks = new Map<string, StreamTask<V>>();
  for (const source of topology.sources) {
    for (let partition = 0; partition < partitions; partition++) {
      const task = new StreamTask<V>({ topology, source, partition, port, logger });
      task.machine.transitionTo('restoring');
      task.finishRestore();
      task.machine.transitionTo('running');
      tasks.set(`${source.topic}/${partition}`, task);
    }
  }
  return tasks;
}

export interface CpuPassesOptions<V> {
  /** Names the figure: `router`, `tables`. */
  what: string;
  topology: Topology<V>;
  /** The records of every pass, in order; each pass starts with new tasks and stores. */
  messages: readonly ConsumedMessage[];
  partitions: number;
  /** The stage's own metric events (a new registry each pass, as a new process would have). */
  metricEvents: (registry: Registry) => Record<string, EventHandler>;
  /** Sees every record sent (a check of the load: the router's must route every delivery). */
  onSend?: (record: OutRecord) => void;
  args: ReturnType<typeof parseCpuPassArgs>;
}

/**
 * Runs the passes: each record through its task in a transaction committed every `commit-records`
 * records (changelog keys encoded, stores committed, metrics folded as the runtime does), then the report.
 */
export async function runCpuPasses<V>({
  what,
  topology,
  messages,
  partitions,
  metricEvents,
  onSend,
  args,
}: CpuPassesOptions<V>): Promise<void> {
  const commitRecords = Number(args['commit-records']);
  const passes: CpuPass[] = [];
  const hrFromUs = hrUs();
  for (let pass = 0; pass < Number(args.passes); pass++) {
    const registry = new Registry();
    const metrics = createStreamMetrics({
      app: `bench-${what}-cpu`,
      registry,
      events: metricEvents(registry),
    });
    let outputs = 0;
    const { cycle, ended } = countingCycle<V>((record) => {
      outputs++;
      onSend?.(record);
    });
    const processing = new RecordProcessing(topology, new Map(), cycle);
    const tasks = runningTasks(topology, partitions);
    const commit = () => {
      for (const task of tasks.values()) {
        if (!task.dirty) continue;
        for (const { record } of task.takeChangelog()) {
          Buffer.from(record.key, 'utf8');
          outputs++;
        }
        const records = task.position.records;
        task.committed(metrics.instrument);
        metrics.instrument('stream.batch', { topic: task.topic }, records);
      }
      ended();
    };
    passes.push(
      await timePass(pass, messages.length, async () => {
        let inBatch = 0;
        for (const message of messages) {
          await processing.process(tasks.get(`${message.topic}/${message.partition}`)!, message);
          if (++inBatch >= commitRecords) {
            commit();
            inBatch = 0;
          }
        }
        commit();
        return outputs;
      }),
    );
  }
  reportPasses(what, messages.length, passes, { json: args.json, hrFromUs, hrToUs: hrUs() });
}
