// What `hookledger replay` prints at the end: the summary, and how consumers move to the replay's topics.
import type { StageCounts } from './bounded-topology.js';
import type { ReplayResult } from './replay.js';
import { nothingMatchedLine } from './trigger-filter.js';

function countsLines(
  stage: string,
  counts: StageCounts,
  source: string,
  triggers: readonly string[] | undefined,
  /** The run read its whole range itself: neither interrupted, nor resumed past records an earlier run read. */
  wholeRange: boolean,
): string[] {
  const lines = [`${stage}: read ${counts.read} record(s) of ${source}`];
  if (counts.filtered > 0) lines[0] += ` (${counts.filtered} more skipped by --trigger)`;
  // Only a run that read its whole range knows that nothing matched: an interrupted one may not have got
  // there, and a resumed one counts only what was left (all of it read by the run before, maybe).
  if (triggers !== undefined && stage === 'dedupe-router' && counts.read === 0 && wholeRange)
    lines.push(`  ${nothingMatchedLine(triggers, counts.filtered)}`);
  const written = [...counts.written].sort(([a], [b]) => a.localeCompare(b));
  for (const [topic, n] of written) lines.push(`  wrote ${String(n).padStart(8)}  ${topic}`);
  if (written.length === 0) lines.push('  wrote nothing');
  const duplicates = counts.events.get('processor.dedupe.duplicate') ?? 0;
  if (stage === 'dedupe-router') {
    const dead = [...counts.deadLettered].reduce((sum, [, n]) => sum + n, 0);
    lines.push(`  duplicates ${duplicates}`);
    lines.push(
      `  dead-lettered ${dead}${dead > 0 ? ` (${[...counts.deadLettered].map(([r, n]) => `${r} ${n}`).join(', ')})` : ''}`,
    );
  }
  return lines;
}

/** The summary of the run (counts are this run's: a resumed replay counted earlier runs then). */
export function summary(result: ReplayResult): string {
  const lines = [
    `replay ${result.id} ${result.completed ? 'complete' : 'interrupted'}${result.resumed ? ' (resumed: counts are this run’s)' : ''}`,
  ];
  for (const stage of result.stages) {
    const source =
      stage.stage === 'dedupe-router' || result.stages.length === 1
        ? [...stage.ranges.keys()].join(', ')
        : 'the replay’s entity streams';
    const wholeRange = result.completed && !result.resumed;
    lines.push(...countsLines(stage.stage, stage.counts, source, result.triggers, wholeRange));
  }
  return lines.join('\n');
}

/** How consumers cut over, and how the replay is cleaned up afterwards. */
export function cutOver(result: ReplayResult, command: string): string {
  if (!result.completed) {
    return `Run \`${command}\` again to resume: it continues from the offsets committed with the outputs (exactly-once), within the same bounds.`;
  }
  // The tables of a whole replay read the replay's own streams: their ends are not bounds anyone chose.
  const bounds = result.stages
    .filter((s) => s.stage === 'dedupe-router' || result.stages.length === 1)
    .flatMap((s) =>
      [...s.ranges].map(
        ([topic, ranges]) => `${topic} ${ranges.map((r) => `${r.partition}:${r.end}`).join(',')}`,
      ),
    )
    .join('; ');
  const width = Math.max(...[...result.topics.keys()].map((t) => t.length));
  return [
    'Side-by-side topics (live → replay):',
    ...[...result.topics].map(([live, copy]) => `  ${live.padEnd(width)} → ${copy}`),
    '',
    `They hold what webhooks.raw had up to the replay's end offsets (${bounds}) and do not follow new`,
    'deliveries: the live processors keep writing the live topics, and nothing else ever does.',
    'To cut a consumer over:',
    `  1. compare first: \`hookledger replay diff --id ${result.id}\` (exit 0: the replay equals live within`,
    '     its bounds; otherwise the keys that differ, and how);',
    '  2. point the consumer at the replay topic, read_committed, from the beginning, and let it reach the end;',
    '  3. move it back to the live topic from a little before the time of the replay’s last records, dropping',
    '     events whose webhookId it already has (each webhook id has one event per stream in each pipeline).',
    'A replayed table (entity.<name>.latest.replay-<id>) is each entity’s state as of those offsets: a',
    'snapshot to compare with or load from, never updated afterwards.',
    'When every consumer has moved, delete the replay topics, their `-value` subjects and the consumer',
    `groups ${result.groups.join(', ')} (internal topics: ${result.internalTopics.join(', ') || 'none'}).`,
  ].join('\n');
}
