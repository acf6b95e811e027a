import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { insecureSources, loadSources, parseSources } from '../../../ingest/sources.js';
import { ConfigError } from '../../../runtime/config.js';

const SECRET = 'very-secret-key-material';

function messageOf(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('expected a ConfigError');
}

describe('sources', () => {
  it('reads the documented example: keys per source, an insecure source', () => {
    const sources = parseSources(
      JSON.stringify({ energy: { keys: { k2026a: 'a', k2026b: 'b' } }, sandbox: { signature: 'none' } }),
    );
    const energy = sources.get('energy')!;
    expect(energy.signature).toBe('required');
    expect([...energy.keys.keys()]).toEqual(['k2026a', 'k2026b']);
    expect(energy.keys.get('k2026a')).toEqual(Buffer.from('a'));
    expect(sources.get('sandbox')).toMatchObject({ signature: 'none' });
    expect(insecureSources(sources)).toEqual(['sandbox']);
  });

  it.each([
    [
      'a source with no key that is not declared insecure',
      { energy: {} },
      'energy.keys: needs at least one key',
    ],
    ['an empty key list', { energy: { keys: {} } }, 'energy.keys: needs at least one key'],
    [
      'an insecure source with keys',
      { s: { signature: 'none', keys: { k: 'x' } } },
      's.keys: a source declared',
    ],
    ['an unknown signature policy', { s: { signature: 'optional' } }, 's.signature:'],
    ['a misspelt property', { s: { key: { k: 'x' } } }, 's:'],
    ['an empty key', { s: { keys: { k: '' } } }, 's.keys.k: a key is a non-empty string'],
    ['a key that is not a string', { s: { keys: { k: 42 } } }, 's.keys.k: a key is a non-empty string'],
    ['a source name that is not a path segment', { 'a/b': { signature: 'none' } }, 'a source name is'],
    ['no source at all', {}, 'expected at least one source'],
  ])('refuses %s with one line naming it', (_name, value, expected) => {
    const message = messageOf(() => parseSources(JSON.stringify(value)));
    expect(message).toContain('HOOKLEDGER_SOURCES: ');
    expect(message).toContain(expected);
    expect(message).not.toContain('\n');
  });

  it('never repeats a key in its messages, even for text that is not JSON', () => {
    expect(messageOf(() => parseSources(`{"s":{"keys":{"k":"${SECRET}"}`))).not.toContain(SECRET);
    expect(messageOf(() => parseSources(`{"s":{"keys":{"k":"${SECRET}"},"signature":"x"}}`))).not.toContain(
      SECRET,
    );
  });

  it('reads the sources from a file (secrets mounted as files)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sources-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'sources.json');
    writeFileSync(file, `${JSON.stringify({ energy: { keys: { k1: SECRET } } })}\n`);
    expect(loadSources({ HOOKLEDGER_SOURCES_FILE: file }).get('energy')!.keys.get('k1')).toEqual(
      Buffer.from(SECRET),
    );
  });

  it('names the variable that is wrong', () => {
    expect(messageOf(() => loadSources({}))).toMatch(/^HOOKLEDGER_SOURCES: .*not set/);
    expect(messageOf(() => loadSources({ HOOKLEDGER_SOURCES_FILE: '/nonexistent/x.json' }))).toMatch(
      /^HOOKLEDGER_SOURCES_FILE: cannot read .*ENOENT/,
    );
    expect(
      messageOf(() => loadSources({ HOOKLEDGER_SOURCES: '{}', HOOKLEDGER_SOURCES_FILE: '/x' })),
    ).toContain('not both');
    expect(messageOf(() => loadSources({ HOOKLEDGER_SOURCES: 'nope' }))).toMatch(
      /^HOOKLEDGER_SOURCES: not valid JSON/,
    );
  });
});
