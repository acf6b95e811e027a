// How a replay watches its stages until they reach their bounds: committed offsets against the ranges,
// reported as progress on the way.
import type { TopicAdmin } from '../../runtime/kafka/admin.js';
import type { Logger } from '../../runtime/log.js';
import type { StreamApp } from '../../runtime/streams/stream-runner.js';
import { CommandFailed } from '../cli/command.js';
import type { CommittedCounter } from './bounded-topology.js';
import type { PartitionRange } from './bounds.js';

export interface ReplayProgress {
  stage: 'dedupe-router' | 'tables';
  /**
   * Source offsets passed by this run so far, and in all (for this run). The tables of a whole replay
   * read the replay's streams while the router writes them: their total grows until the router is done.
   */
  done: bigint;
  total: bigint;
  /** Records this run handed to the stage's processor (committed), as the summary counts them. */
  read: number;
  elapsedMs: number;
}

export interface RunningPart {
  stage: 'dedupe-router' | 'tables';
  appId: string;
  app: StreamApp;
  counter: CommittedCounter;
  ranges: Map<string, PartitionRange[]>;
  /**
   * The tables of a whole replay: where this run started on each of the replay's streams. Their ranges
   * run from here to the streams' current end, final once the router is done.
   */
  growing?: { starts: Map<string, Map<number, bigint>>; final: boolean };
  /** The offsets passed and in all at the last poll. */
  last?: { done: bigint; total: bigint };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Committed offsets of a group on a topic, by partition (absent: none). */
function committed(admin: TopicAdmin, groupId: string, topic: string): Promise<Map<number, bigint>> {
  return admin.committedOffsets(groupId, topic);
}

/** Offsets passed so far and in all, over every range of a part. */
async function progressOf(admin: TopicAdmin, part: RunningPart): Promise<{ done: bigint; total: bigint }> {
  let done = 0n;
  let total = 0n;
  for (const [topic, ranges] of part.ranges) {
    const at = await committed(admin, part.appId, topic);
    for (const r of ranges) {
      total += r.end - r.start;
      const position = at.get(r.partition) ?? r.start;
      done += (position > r.end ? r.end : position) - r.start;
    }
  }
  return { done, total };
}

/** Where a group stands on each partition of the topics: its committed offset, else the first offset. */
export async function startsOf(
  admin: TopicAdmin,
  groupId: string,
  topics: readonly string[],
): Promise<Map<string, Map<number, bigint>>> {
  const out = new Map<string, Map<number, bigint>>();
  for (const topic of topics) {
    const at = await committed(admin, groupId, topic);
    const marks = await admin.watermarks(topic);
    out.set(topic, new Map(marks.map((m) => [m.partition, at.get(m.partition) ?? BigInt(m.low)])));
  }
  return out;
}

/** The ranges of the tables of a whole replay: from this run's start to each stream's end now. */
async function growRanges(admin: TopicAdmin, part: RunningPart): Promise<void> {
  for (const [topic, starts] of part.growing!.starts) {
    const highs = await admin.watermarks(topic);
    part.ranges.set(
      topic,
      highs.map((h) => {
        const start = starts.get(h.partition) ?? BigInt(h.low);
        const end = BigInt(h.high);
        return { partition: h.partition, start: start > end ? end : start, end };
      }),
    );
  }
}

/** Watches committed offsets until every part reached its bounds; false when interrupted. */
export async function follow(
  admin: TopicAdmin,
  context: {
    parts: RunningPart[];
    started: number;
    pollMs: number;
    onProgress: ((progress: ReplayProgress) => void) | undefined;
    signal: AbortSignal | undefined;
    log: Logger;
  },
): Promise<boolean> {
  const { parts, started, pollMs, onProgress, signal, log } = context;
  const aborted = new Promise<void>((resolve) => {
    if (signal?.aborted) resolve();
    signal?.addEventListener('abort', () => resolve(), { once: true });
  });
  const stopped = Promise.race(parts.map((p) => p.app.stopped.then(() => p)));
  let routerDone = !parts.some((p) => p.stage === 'dedupe-router');
  for (;;) {
    // The router comes first in `parts`: the tables learn in the same round that their ranges are final.
    let finished = true;
    for (const part of parts) {
      // The replay's streams are complete once the router is: their end then is the tables' bound.
      if (part.growing !== undefined && !part.growing.final) {
        await growRanges(admin, part);
        part.growing.final = routerDone;
      }
      // One reading both shows progress and decides the end: the last update shown is the final state.
      const { done, total } = await progressOf(admin, part);
      part.last = { done, total };
      const read = part.counter.total.read;
      onProgress?.({ stage: part.stage, done, total, read, elapsedMs: Date.now() - started });
      if (part.stage === 'dedupe-router' && !routerDone && done >= total) {
        routerDone = true;
        log.info('dedupe-router reached its bounds');
      }
      if (done < total || (part.growing !== undefined && !part.growing.final)) finished = false;
    }
    if (finished) return true;
    const outcome = await Promise.race([
      sleep(pollMs).then(() => 'poll' as const),
      aborted.then(() => 'aborted' as const),
      stopped.then((part) => part),
    ]);
    if (outcome === 'aborted') return false;
    if (outcome !== 'poll') {
      // One line with the app's own cause (a fenced producer, a lost registry), not a stack of this loop.
      const cause = outcome.app.failure()?.message.split('\n')[0] ?? 'its consumer crashed';
      throw new CommandFailed(`the replay's ${outcome.stage} stage stopped: ${cause}`);
    }
  }
}
