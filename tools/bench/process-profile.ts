// Summarises a V8 .cpuprofile (from `node --cpu-prof`) over a time window: self time by function and
// by package, idle time left out, so the benchmark can say where a stage's CPU goes.
import { readFileSync } from 'node:fs';
import { ROOT } from './children.js';

interface ProfileNode {
  id: number;
  children?: number[];
  callFrame: { functionName: string; url: string; lineNumber: number };
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface SelfTime {
  name: string;
  where: string;
  ms: number;
  share: number;
}

export interface ProfileSummary {
  /** Busy (non-idle) milliseconds sampled inside the window. */
  busyMs: number;
  /** False when the window did not fall inside the profile: then the whole profile is summarised. */
  windowed: boolean;
  functions: SelfTime[];
  packages: SelfTime[];
  /** The project's own functions (processors/, runtime/, schemas/) by inclusive time: what they and their callees cost. */
  ownInclusive: SelfTime[];
  /** Every busy sample in one phase of the work, by what its stack holds (see phaseOf). */
  phases: SelfTime[];
}

/** A frame of the runtime (runtime/streams, runtime/kafka) in one of the named files. */
const runtimeFrame = (files: string) => new RegExp(`^\\S+ runtime/(streams|kafka)/(${files})\\.ts`);
const RESTORE = runtimeFrame('restore|restore-orchestrator|read-to-end');
const COMMIT =
  /^((commit|committed|takeChangelog|sendOffsets|finish) runtime\/streams\/|Producer\.(sendOffsetsToTransaction|commitTransaction|beginTransaction) @confluentinc)/;
const PRODUCE =
  /^(send \S*runtime\/streams\/(eos-producer|transaction-cycle|stream-clients)|Producer\.produce @confluentinc)/;
const PROCESS = /^(process runtime\/streams\/stream-task|\S+ processors\/)/;
const LOOP = runtimeFrame(
  'stream-runner|record-processing|stream-clients|runner-context|rebalances|stream-task|task-state|store|id-set',
);
const BINDING = /@confluentinc\/kafka-javascript\/lib\/(\S+)/;

/**
 * Phases in the order they are tested: the first whose test matches a sample's stack (frames from the
 * sampled function down to the root) takes it. librdkafka's own threads (fetching, batching, the
 * network) are not sampled: V8 sees only the JavaScript thread, where the binding's work shows as its
 * lib/*.js functions (a native call's time counts as the JavaScript function that made it) and as
 * "(program)" (native code outside any JavaScript: the event loop, the binding's callbacks into it).
 */
const PHASES: [string, (frames: string[]) => boolean][] = [
  ['garbage collection', (f) => f[0] === '(garbage collector)'],
  [
    "native, outside JavaScript ((program): event loop, the binding's native callbacks)",
    (f) => f[0] === '(program)',
  ],
  ['restore (restore, read-to-end)', (f) => f.some((x) => RESTORE.test(x))],
  // The registry's encode/decode resume from microtasks: matched before what called them.
  [
    "decoding raw envelopes (the topology's deserialize: the serde's cached decode or the registry's, avsc fromBuffer)",
    (f) =>
      f.some((x) =>
        /^(decode .*confluent-schema-registry|decodeCached schemas\/|fromBuffer |deserialize processors\/)/.test(
          x,
        ),
      ),
  ],
  [
    "Avro encoding of outputs (the serde's cached encode or the registry's, avsc)",
    (f) => f.some((x) => /^(encode .*confluent-schema-registry|encodeCached schemas\/|toBuffer )/.test(x)),
  ],
  [
    'committing: changelog records, sendOffsetsToTransaction, commitTransaction, stores and metrics after it',
    (f) => f.some((x) => COMMIT.test(x)),
  ],
  [
    'producing: eos-producer send → librdkafka produce() (binding lib/producer.js, the native copy into its queue)',
    (f) => f.some((x) => PRODUCE.test(x)),
  ],
  [
    'processing records: parse, validate, dedupe, route (stream-task process → processors/)',
    (f) => f.some((x) => PROCESS.test(x)),
  ],
  [
    'fetching: librdkafka consume() → JavaScript messages (binding lib/kafka-consumer.js)',
    (f) => f.some((x) => /@confluentinc\/kafka-javascript\/lib\/kafka-consumer/.test(x)),
  ],
  [
    "the runtime's loop around records: message → record, headers, serialize loop, positions, lag (stream-runner, record-processing, stream-task, task-state, store)",
    (f) => f.some((x) => LOOP.test(x)),
  ],
  ['librdkafka binding, other (lib/client.js, events, logs)', (f) => f.some((x) => BINDING.test(x))],
  ['metrics (prom-client)', (f) => f.some((x) => x.includes(' prom-client/'))],
];

/** The package (or project folder, or Node's internals) a script belongs to. */
function packageOf(url: string, name: string): string {
  if (url === '') return name.startsWith('(') ? name : '(native)';
  if (url.startsWith('node:')) return 'node internals';
  const path = url.replace(/^file:\/\//, '');
  const inModules = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path);
  if (inModules) return inModules[1]!;
  if (path.startsWith(ROOT)) return path.slice(ROOT.length).split('/').slice(0, 2).join('/');
  return path;
}

function shortWhere(url: string, line: number): string {
  if (url === '') return '';
  const path = url.replace(/^file:\/\//, '');
  const inModules = /node_modules\/(.*)$/.exec(path);
  const short = inModules ? inModules[1]! : path.startsWith(ROOT) ? path.slice(ROOT.length) : path;
  // tsx runs transpiled code without mapping the profile back: a .ts line number would mislead.
  return short.endsWith('.ts') ? short : `${short}:${line + 1}`;
}

/**
 * Self time per function and per package for the samples taken between `fromUs` and `toUs` (the
 * profile's clock: microseconds of the monotonic clock, as `process.hrtime`).
 */
export function summariseProfile(file: string, fromUs: number, toUs: number, top = 12): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const parents = new Map<number, number>();
  for (const n of profile.nodes) for (const child of n.children ?? []) parents.set(child, n.id);
  const inclusive = new Map<string, SelfTime>();
  const phases = new Map<string, SelfTime>();
  const windowed = fromUs >= profile.startTime && toUs <= profile.endTime && toUs > fromUs;
  const from = windowed ? fromUs : profile.startTime;
  const to = windowed ? toUs : profile.endTime;
  const byFunction = new Map<string, SelfTime>();
  const byPackage = new Map<string, SelfTime>();
  let busyUs = 0;
  let at = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    at += profile.timeDeltas[i] ?? 0;
    // A sample stands for the time until the next one (as DevTools counts it).
    const duration = profile.timeDeltas[i + 1] ?? 0;
    if (at < from || at > to) continue;
    const node = nodes.get(profile.samples[i]!);
    if (node === undefined) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    const name = functionName || '(anonymous)';
    if (name === '(idle)' || name === '(root)') continue;
    busyUs += duration;
    const where = shortWhere(url, lineNumber);
    const key = `${name}\u0000${where}`;
    const entry = byFunction.get(key) ?? { name, where, ms: 0, share: 0 };
    entry.ms += duration / 1000;
    byFunction.set(key, entry);
    const pkg = packageOf(url, name);
    const group = byPackage.get(pkg) ?? { name: pkg, where: '', ms: 0, share: 0 };
    group.ms += duration / 1000;
    byPackage.set(pkg, group);
    // Inclusive: each of the project's functions on this sample's stack, once.
    const onStack = new Set<string>();
    const frames: string[] = [];
    for (let id: number | undefined = node.id; id !== undefined; id = parents.get(id)) {
      const frame = nodes.get(id)!.callFrame;
      frames.push(`${frame.functionName || '(anonymous)'} ${shortWhere(frame.url, frame.lineNumber)}`.trim());
      const loc = shortWhere(frame.url, frame.lineNumber);
      if (!/^(processors|runtime|schemas)\//.test(loc)) continue;
      const own = `${frame.functionName || '(anonymous)'}\u0000${loc}`;
      if (onStack.has(own)) continue;
      onStack.add(own);
      const entry = inclusive.get(own) ?? {
        name: frame.functionName || '(anonymous)',
        where: loc,
        ms: 0,
        share: 0,
      };
      entry.ms += duration / 1000;
      inclusive.set(own, entry);
    }
    const phase = PHASES.find(([, test]) => test(frames))?.[0] ?? 'other: timers, metrics, async plumbing';
    const inPhase = phases.get(phase) ?? { name: phase, where: '', ms: 0, share: 0 };
    inPhase.ms += duration / 1000;
    phases.set(phase, inPhase);
  }
  const ranked = (entries: Iterable<SelfTime>) =>
    [...entries]
      .map((e) => ({ ...e, share: busyUs > 0 ? (e.ms * 1000) / busyUs : 0 }))
      .sort((a, b) => b.ms - a.ms)
      .slice(0, top);
  return {
    busyMs: busyUs / 1000,
    windowed,
    functions: ranked(byFunction.values()),
    packages: ranked(byPackage.values()),
    ownInclusive: ranked(inclusive.values()),
    phases: ranked(phases.values()),
  };
}
