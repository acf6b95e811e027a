// `hookledger tail --help` names exactly the catalog's topics: none it lacks, and every one it has.
import { describe, expect, it } from 'vitest';
import { topicCatalog } from '../../../schemas/topics.js';
import { command } from '../../../tools/cli/commands/tail.js';

const catalog = topicCatalog({
  prefix: '',
  bodyLimit: 1_048_576,
  dedupeWindowMs: 7 * 86_400_000,
  partitions: 12,
  replicationFactor: 3,
});
const compacted = catalog
  .filter((t) => String(t.configs['cleanup.policy']).includes('compact'))
  .map((t) => t.name);

/**
 * The topics the help's stream list names, read as a person reads it: literal names, and patterns with
 * `<name>` expanded by the names listed beside them; `*` marks a compacted one.
 */
function namedInHelp(): { name: string; compacted: boolean }[] {
  const start = command.help.indexOf('<stream> is');
  const list = command.help.slice(start, command.help.indexOf('\nAny other name', start));
  const named: { name: string; compacted: boolean }[] = [];
  for (const line of list.split('\n').slice(1)) {
    if (!line.startsWith('  ')) continue;
    const pattern = /^ {2}(entity\.<name>[\w.-]*)(\*?) {2,}(.+)$/.exec(line);
    if (pattern) {
      for (const name of pattern[3]!.split(', '))
        named.push({ name: pattern[1]!.replace('<name>', name), compacted: pattern[2] === '*' });
      continue;
    }
    // A list too long for one line goes on over the next, each but the last ending with a comma.
    for (const item of line.trim().replace(/,$/, '').split(', '))
      named.push({ name: item.replace(/\*$/, ''), compacted: item.endsWith('*') });
  }
  return named;
}

describe('hookledger tail --help', () => {
  it('names only topics of the catalog, and all of them', () => {
    const named = namedInHelp().map(({ name }) => name);
    expect(named.filter((name) => !catalog.some((t) => t.name === name))).toEqual([]);
    expect(named.sort()).toEqual(catalog.map((t) => t.name).sort());
  });

  it('names no table the catalog lacks (entity.other has a stream but no .latest)', () => {
    expect(namedInHelp().map(({ name }) => name)).not.toContain('entity.other.latest');
    expect(command.help).not.toMatch(/entity\.other\.latest/);
  });

  it('marks exactly the compacted topics, which it prints as tables', () => {
    const marked = namedInHelp()
      .filter((t) => t.compacted)
      .map((t) => t.name);
    expect(marked.sort()).toEqual(compacted.sort());
    expect(marked).toContain('entity.energy-switch.latest');
  });
});
