// What the in-process CPU benches (bench:router-cpu, bench:tables-cpu) share: their options, how one pass
// over the load is timed, and how the passes are summed up (the median pass, and the best one, which a
// busy machine disturbs least) in a line and, with --json, one JSON object on stdout.
import { parseArgs } from 'node:util';

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
export const hrUs = () => Number(process.hrtime.bigint() / 1000n);

/** Times one pass of `events` events (wall and this process's CPU) and logs it. */
export async function timePass(index: number, events: number, run: () => Promise<number>): Promise<CpuPass> {
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
export function reportPasses(
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
