// Kafka's kafka-consumer-perf-test over the bench's raw topic (through `hookledger stack kafka-tool`):
// how fast the JVM client alone reads the same records, the floor under any consumer's cost.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { kafkaToolOutput } from './children.js';
import { machineBusySeconds, processCpuSeconds } from './proc-stats.js';

const TICK = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;

/** CPU seconds of this process's children that have exited and been waited for (the tool, its JVM). */
function reapedChildrenCpuSeconds(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[13]) + Number(fields[14])) / TICK;
}

export interface ConsumerPerf {
  /** Records over the time spent fetching (group join excluded). */
  fetchRecordsPerSec: number;
  /** Records over the tool's whole consuming time, group join included. */
  recordsPerSec: number;
  records: number;
  seconds: number;
  /** The tool's run, JVM start-up included (the span the CPU figures cover). */
  wallSeconds: number;
  /** The tool's CPU, its node wrapper and JVM start-up included. */
  toolCpu: number;
  brokerCpu: number | undefined;
  machineBusy: number;
  output: string;
}

export async function consumerPerfTest({
  brokers,
  clientConfig,
  topic,
  messages,
  brokerPid,
}: {
  brokers: string[];
  /** The Java client's connection properties file (a secured cluster). */
  clientConfig?: string;
  topic: string;
  messages: number;
  brokerPid: number | undefined;
}): Promise<ConsumerPerf> {
  const children0 = reapedChildrenCpuSeconds();
  const broker0 = processCpuSeconds(brokerPid);
  const machine0 = machineBusySeconds();
  const started = performance.now();
  const output = await kafkaToolOutput('consumer-perf-test', [
    '--bootstrap-server',
    brokers.join(','),
    ...(clientConfig ? ['--consumer.config', clientConfig] : []),
    '--topic',
    topic,
    '--messages',
    String(messages),
    '--timeout',
    '30000',
  ]);
  const broker1 = processCpuSeconds(brokerPid);
  const lines = output.trim().split('\n');
  const headerAt = lines.findIndex((l) => l.includes('nMsg.sec'));
  if (headerAt < 0 || headerAt + 1 >= lines.length) throw new Error(`unexpected perf test output: ${output}`);
  const header = lines[headerAt]!.split(',').map((s) => s.trim());
  const row = lines[headerAt + 1]!.split(',').map((s) => s.trim());
  const column = (name: string) => Number(row[header.indexOf(name)]);
  const fetchMs = column('fetch.time.ms');
  const records = column('data.consumed.in.nMsg');
  return {
    fetchRecordsPerSec: column('fetch.nMsg.sec'),
    recordsPerSec: column('nMsg.sec'),
    records,
    seconds: fetchMs / 1000,
    wallSeconds: (performance.now() - started) / 1000,
    toolCpu: reapedChildrenCpuSeconds() - children0,
    brokerCpu: broker0 !== undefined && broker1 !== undefined ? broker1 - broker0 : undefined,
    machineBusy: machineBusySeconds() - machine0,
    output: lines.slice(headerAt, headerAt + 2).join('\n'),
  };
}
