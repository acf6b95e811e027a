// What `hookledger replay diff` prints: a table of counts per topic, the differing keys with a few
// field-level samples, and a last line saying equal or not; or all of it as one JSON object.

import type { ReplayDiff } from './diff.js';
import { differs, type FieldDifference, type TopicDiff } from './diff-compare.js';

/** Keys listed per topic and kind of difference in the text (the JSON lists them all). */
const LISTED_KEYS = 10;

export function equal(diff: ReplayDiff): boolean {
  return diff.topics.every((t) => !differs(t));
}

function boundsText(diff: ReplayDiff): string {
  const ranges = [...diff.source.ranges].map(
    ([topic, list]) => `${topic} ${list.map((r) => `${r.partition}:${r.start}-${r.end}`).join(',')}`,
  );
  const triggers = diff.source.triggers === undefined ? '' : `, triggers ${diff.source.triggers.join(',')}`;
  return `${ranges.join('; ')}${triggers}`;
}

const shown = (value: unknown) => {
  const text = JSON.stringify(value);
  return text.length > 120 ? `${text.slice(0, 117)}…` : text;
};

function fieldLines(fields: readonly FieldDifference[]): string[] {
  return fields.map(
    (f) => `      ${f.path || '(value)'}: ${shown(f.live)} (live) → ${shown(f.replay)} (replay)`,
  );
}

function listed(what: string, keys: readonly string[]): string[] {
  if (keys.length === 0) return [];
  const more = keys.length > LISTED_KEYS ? ` … and ${keys.length - LISTED_KEYS} more` : '';
  return [`  ${keys.length} key(s) ${what}: ${keys.slice(0, LISTED_KEYS).join(', ')}${more}`];
}

function topicLines(topic: TopicDiff): string[] {
  if (!differs(topic)) return [];
  const lines = [`${topic.live} ↔ ${topic.replay}`];
  lines.push(...listed('only in live', topic.onlyLive), ...listed('only in the replay', topic.onlyReplay));
  lines.push(...listed('with different records', topic.differ));
  for (const sample of topic.samples) {
    lines.push(`    ${sample.key}`);
    for (const record of sample.records) {
      const id = record.webhookId === null ? '' : ` webhookId ${record.webhookId}`;
      if (record.side === 'both') lines.push(`    ·${id}:`, ...fieldLines(record.fields));
      else lines.push(`    ·${id}: a record only in ${record.side === 'live' ? 'live' : 'the replay'}`);
    }
  }
  return lines;
}

/** The text report. */
export function diffText(diff: ReplayDiff): string {
  const width = Math.max(5, ...diff.topics.map((t) => t.live.length));
  const num = (n: number, w: number) => String(n).padStart(w);
  const header = `  ${'topic'.padEnd(width)}  ${'live'.padStart(7)} ${'replay'.padStart(7)} ${'same'.padStart(7)} ${'only live'.padStart(10)} ${'only replay'.padStart(12)} ${'differ'.padStart(7)}`;
  const rows = diff.topics.map((t) => {
    const movedOn = t.movedOn > 0 ? `  (${t.movedOn} key(s) changed outside the bounds: not compared)` : '';
    return `  ${t.live.padEnd(width)}  ${num(t.records.live, 7)} ${num(t.records.replay, 7)} ${num(t.same, 7)} ${num(t.onlyLive.length, 10)} ${num(t.onlyReplay.length, 12)} ${num(t.differ.length, 7)}${movedOn}`;
  });
  const lines = [
    `replay ${diff.id} against the live topics, within its bounds (${boundsText(diff)})`,
    ...(diff.source.noted
      ? []
      : [
          '(the replay kept no starts or trigger filter: whole partitions up to its end bounds are compared)',
        ]),
    '',
    'records per topic (tables: rows), keys the same, only on one side, or with different records:',
    header,
    ...rows,
  ];
  const details = diff.topics.flatMap(topicLines);
  if (details.length > 0) lines.push('', ...details);
  if (diff.source.startedLate && diff.topics.some((t) => t.onlyReplay.length > 0))
    lines.push(
      '',
      'the replay began after the first records of webhooks.raw (--from, --from-offset) with empty dedupe state:',
      'a retry inside its range whose first delivery came before it is routed by the replay, where live dropped',
      'it as a duplicate, so such ids are only in the replay. To compare them, replay from at least DEDUPE_WINDOW',
      'before the time you care about.',
    );
  const differing = diff.topics.filter(differs);
  const keys = differing.reduce((n, t) => n + t.onlyLive.length + t.onlyReplay.length + t.differ.length, 0);
  lines.push(
    '',
    differing.length === 0
      ? `replay ${diff.id} equals live: ${diff.topics.reduce((n, t) => n + t.same, 0)} key(s) in ${diff.topics.length} topic(s)`
      : `replay ${diff.id} differs from live: ${keys} key(s) in ${differing.length} topic(s)`,
  );
  return lines.join('\n');
}

/** The JSON report: everything, every key listed. */
export function diffJson(diff: ReplayDiff): string {
  return JSON.stringify({
    replay: diff.id,
    equal: equal(diff),
    source: {
      ranges: Object.fromEntries(
        [...diff.source.ranges].map(([topic, list]) => [
          topic,
          list.map((r) => ({ partition: r.partition, start: Number(r.start), end: Number(r.end) })),
        ]),
      ),
      triggers: diff.source.triggers ?? null,
      noted: diff.source.noted,
      startedLate: diff.source.startedLate,
    },
    topics: diff.topics,
  });
}
