// What the benchmarks read from /proc: CPU seconds of a process and of the whole machine, its memory,
// the pid behind a local port, and the pid of the Kafka broker behind KAFKA_BROKERS.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const TICK = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;

/** CPU seconds (user + system) a process has used so far; undefined once it is gone. */
export function processCpuSeconds(pid: number | undefined): number | undefined {
  if (!pid) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICK;
  } catch {
    return undefined;
  }
}

/** CPU seconds of a process and its descendants (ingest's workers, stream threads) so far. */
export function treeCpuSeconds(pid: number | undefined): number | undefined {
  const tree = processTree(pid);
  if (tree.length === 0) return undefined;
  return tree.reduce((sum, each) => sum + (processCpuSeconds(each) ?? 0), 0);
}

/** Resident memory of a process and its descendants, summed, in MiB. */
export function treeRssMiB(pid: number | undefined, field: 'VmRSS' | 'VmHWM' = 'VmRSS'): number | undefined {
  const tree = processTree(pid);
  if (tree.length === 0) return undefined;
  return tree.reduce((sum, each) => sum + (rssMiB(each, field) ?? 0), 0);
}

/** Core-seconds the whole machine spent busy (not idle, not waiting for I/O) since boot. */
export function machineBusySeconds(): number {
  const [, ...ticks] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/);
  // user nice system idle iowait irq softirq steal (guest time is already inside user).
  const n = ticks.slice(0, 8).map(Number);
  return (n[0]! + n[1]! + n[2]! + n[5]! + n[6]! + n[7]!) / TICK;
}

/** Resident memory now (VmRSS) or at its peak (VmHWM), in MiB. */
export function rssMiB(pid: number | undefined, field: 'VmRSS' | 'VmHWM' = 'VmRSS'): number | undefined {
  if (!pid) return undefined;
  try {
    const match = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

export const peakRssMiB = (pid: number | undefined) => rssMiB(pid, 'VmHWM');

/** A process and its descendants (forked stream threads, say), found by their parent pids in /proc. */
export function processTree(pid: number | undefined): number[] {
  if (!pid) return [];
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(parent, [...(children.get(parent) ?? []), Number(entry)]);
    } catch {
      // gone meanwhile
    }
  }
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) tree.push(...(children.get(tree[i]!) ?? []));
  return tree;
}

function commandLine(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  } catch {
    return [];
  }
}

/** The pid `ss` names as listening on a local TCP port (needs the same user, or root). */
export function pidListeningOn(port: number): number | undefined {
  try {
    const out = execFileSync('ss', ['-ltnpH', `sport = :${port}`], { stdio: ['ignore', 'pipe', 'ignore'] });
    const match = /pid=(\d+)/.exec(out.toString());
    return match ? Number(match[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** Whether the broker's properties file (its last argument, relative to its cwd) listens on the port. */
function propertiesNamePort(pid: number, args: string[], port: number): boolean {
  const file = args.at(-1);
  if (!file?.endsWith('.properties')) return false;
  try {
    const text = readFileSync(file.startsWith('/') ? file : join(`/proc/${pid}/cwd`, file), 'utf8');
    return new RegExp(`^\\s*listeners\\s*=.*:${port}\\b`, 'm').test(text);
  } catch {
    return false;
  }
}

/**
 * The Kafka JVM serving `host:port`: a java process whose command line runs `kafka.Kafka`, and which
 * names the port on its command line, listens on it (per `ss`), or lists it in its properties file.
 */
export function findBrokerPid(broker: string): number | undefined {
  const port = Number(broker.split(':').at(-1));
  const candidates: { pid: number; args: string[] }[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    const args = commandLine(pid);
    if (args.length > 0 && /java$/.test(args[0]!) && args.includes('kafka.Kafka'))
      candidates.push({ pid, args });
  }
  const listening = pidListeningOn(port);
  return (
    candidates.find(({ args }) => args.some((a) => a.includes(`:${port}`)))?.pid ??
    candidates.find(({ pid }) => pid === listening)?.pid ??
    candidates.find(({ pid, args }) => propertiesNamePort(pid, args, port))?.pid
  );
}
