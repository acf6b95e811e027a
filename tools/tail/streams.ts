// `hookledger tail <stream>`: a stream is a topic's logical name (prefixed with TOPIC_PREFIX) or a full name.
import { ENTITY_STREAMS, TABLE_STREAMS, topicCatalog, topicNames } from '../../schemas/topics.js';

/** The catalog with sizes and counts that do not change its names or cleanup policies. */
function catalog() {
  return topicCatalog({ prefix: '', bodyLimit: 1, dedupeWindowMs: 1, partitions: 1, replicationFactor: 1 });
}

/** The logical names of every hookledger topic: webhooks.raw, entity.user, entity.user.latest, … */
export function logicalStreams(): string[] {
  return catalog().map((topic) => topic.name);
}

/** The topic to read: the logical name with the prefix, or the name as given when it is not a logical one. */
export function resolveTopic(stream: string, prefix: string): string {
  return logicalStreams().includes(stream) ? `${prefix}${stream}` : stream;
}

/**
 * The logical names as `tail --help` lists them, from the catalog: the entity topics grouped by pattern
 * with the names each pattern takes, every other topic by name; compacted ones (tables) marked `*`.
 */
export function streamsHelp(): string {
  const compacted = new Set(
    catalog()
      .filter((topic) => String(topic.configs['cleanup.policy']).split(',').includes('compact'))
      .map((topic) => topic.name),
  );
  const mark = (name: string) => (compacted.has(name) ? `${name}*` : name);
  const names = topicNames('');
  const patterns = [
    { pattern: 'entity.<name>', streams: ENTITY_STREAMS, topics: ENTITY_STREAMS.map(names.entity) },
    { pattern: 'entity.<name>.latest', streams: TABLE_STREAMS, topics: TABLE_STREAMS.map(names.latest) },
    {
      pattern: 'entity.<name>.merge-changelog',
      streams: TABLE_STREAMS,
      topics: TABLE_STREAMS.map(names.mergeChangelog),
    },
  ];
  const grouped = new Set(patterns.flatMap(({ topics }) => topics));
  const others = logicalStreams().filter((name) => !grouped.has(name));
  const rows = patterns.map(({ pattern, streams, topics }) => ({
    // A pattern is a table when its topics are (the catalog gives all of one pattern the same policy).
    label: compacted.has(topics[0]!) ? `${pattern}*` : pattern,
    names: streams.join(', '),
  }));
  const width = Math.max(...rows.map(({ label }) => label.length));
  return [
    ...commaLines(others.map(mark), 100),
    ...rows.map(({ label, names }) => `  ${label.padEnd(width)}  ${names}`),
  ].join('\n');
}

/** Names as comma-separated lines of at most `width` characters, each indented two spaces. */
function commaLines(items: string[], width: number): string[] {
  const lines: string[][] = [[]];
  for (const item of items) {
    const line = lines.at(-1)!;
    if (line.length > 0 && `  ${[...line, item].join(', ')},`.length > width) lines.push([item]);
    else line.push(item);
  }
  return lines.map((line, i) => `  ${line.join(', ')}${i < lines.length - 1 ? ',' : ''}`);
}
