import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { insecureSources, loadSources, parseSources } from '../../../ingest/sources.js';
import { ConfigError } from '../../../runtime/config.js';

const SECRET = 'very-secret-key-material-0123456789abcdef';
const KEY_A = '3f9c1e5a7b2d4f6081a3c5e7f9b1d3f5';
const KEY_B = '8e6c4a2f0d1b3957e8c6a4f2d0b19375';

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
  it("accepts the contract's sample keys: 20 bytes and more, RFC 2104's minimum for HMAC-SHA1", () => {
    const sources = parseSources(
      JSON.stringify({
        fixtures: { keys: { k1: 'fixture-shared-key-1', k2: 'fixture-shared-key-2-rotated' } },
      }),
    );
    expect([...sources.get('fixtures')!.keys.keys()]).toEqual(['k1', 'k2']);
  });

  it('reads the documented example: keys per source, an insecure source', () => {
    const sources = parseSources(
      JSON.stringify({ energy: { keys: { k2026a: KEY_A, k2026b: KEY_B } }, sandbox: { signature: 'none' } }),
    );
    const energy = sources.get('energy')!;
    expect(energy.signature).toBe('required');
    expect([...energy.keys.keys()]).toEqual(['k2026a', 'k2026b']);
    expect(energy.keys.get('k2026a')).toEqual(Buffer.from(KEY_A));
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
      { s: { signature: 'none', keys: { k: KEY_A } } },
      's.keys: a source declared',
    ],
    ['an unknown signature policy', { s: { signature: 'optional' } }, 's.signature:'],
    ['a misspelt property', { s: { key: { k: KEY_A } } }, 's:'],
    [
      "a key shorter than HMAC-SHA1's 20 bytes",
      { s: { keys: { k: 'short-but-not-empty' } } },
      's.keys.k: a key is at least 20 bytes (this one has 19)',
    ],
    [
      "docker-compose's placeholder",
      { s: { keys: { k1: 'change-me' } } },
      's.keys.k1: a key is at least 20 bytes',
    ],
    [
      'a long placeholder',
      { s: { keys: { k1: 'change-me-to-a-long-random-secret-please' } } },
      's.keys.k1: this key is a placeholder',
    ],
    [
      'a key of one repeated character',
      { s: { keys: { k1: 'a'.repeat(64) } } },
      's.keys.k1: this key is a placeholder',
    ],
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

  it('never repeats a weak key in its message', () => {
    for (const key of ['change-me', 'change-me-to-a-long-random-secret-please', 'z'.repeat(40)]) {
      const message = messageOf(() => parseSources(JSON.stringify({ s: { keys: { k: key } } })));
      expect(message).not.toContain(key);
    }
  });

  it('refuses a source declared insecure unless INGEST_UNSIGNED_SOURCES names it', () => {
    const HOOKLEDGER_SOURCES = JSON.stringify({
      energy: { keys: { k1: KEY_A } },
      sandbox: { signature: 'none' },
      demo: { signature: 'none' },
    });
    const refused = messageOf(() => loadSources({ HOOKLEDGER_SOURCES }));
    expect(refused).toMatch(/^INGEST_UNSIGNED_SOURCES: source "sandbox", "demo" accepts unsigned deliveries/);
    expect(refused).not.toContain('\n');
    expect(messageOf(() => loadSources({ HOOKLEDGER_SOURCES, INGEST_UNSIGNED_SOURCES: 'sandbox' }))).toMatch(
      /source "demo" accepts/,
    );
    const sources = loadSources({ HOOKLEDGER_SOURCES, INGEST_UNSIGNED_SOURCES: 'sandbox, demo' });
    expect(insecureSources(sources)).toEqual(['sandbox', 'demo']);
    // Naming a signed source changes nothing: it still needs its signature.
    expect(
      loadSources({
        HOOKLEDGER_SOURCES: JSON.stringify({ energy: { keys: { k1: KEY_A } } }),
        INGEST_UNSIGNED_SOURCES: 'energy',
      }).get('energy')!.signature,
    ).toBe('required');
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

  it('reads the old names, HOOKSTREAM_SOURCES and HOOKSTREAM_SOURCES_FILE, while the new ones are unset', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sources-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'sources.json');
    writeFileSync(file, JSON.stringify({ fromfile: { keys: { k1: KEY_B } } }));
    const inline = JSON.stringify({ energy: { keys: { k1: KEY_A } } });
    expect([...loadSources({ HOOKSTREAM_SOURCES: inline }).keys()]).toEqual(['energy']);
    expect([...loadSources({ HOOKSTREAM_SOURCES_FILE: file }).keys()]).toEqual(['fromfile']);
    // Empty is unset, as for the new names.
    expect([...loadSources({ HOOKLEDGER_SOURCES: '', HOOKSTREAM_SOURCES: inline }).keys()]).toEqual([
      'energy',
    ]);
  });

  it('reads the new names, and none of the old ones, when both are set', () => {
    const current = JSON.stringify({ current: { keys: { k1: KEY_A } } });
    const old = JSON.stringify({ old: { keys: { k1: KEY_B } } });
    expect([...loadSources({ HOOKLEDGER_SOURCES: current, HOOKSTREAM_SOURCES: old }).keys()]).toEqual([
      'current',
    ]);
    expect([
      ...loadSources({ HOOKLEDGER_SOURCES: current, HOOKSTREAM_SOURCES_FILE: '/nonexistent' }).keys(),
    ]).toEqual(['current']);
  });

  it('names an old variable that is wrong by the name it was given', () => {
    expect(messageOf(() => loadSources({ HOOKSTREAM_SOURCES: 'nope' }))).toMatch(
      /^HOOKSTREAM_SOURCES: not valid JSON/,
    );
    expect(messageOf(() => loadSources({ HOOKSTREAM_SOURCES_FILE: '/nonexistent/x.json' }))).toMatch(
      /^HOOKSTREAM_SOURCES_FILE: cannot read .*ENOENT/,
    );
    expect(messageOf(() => loadSources({ HOOKSTREAM_SOURCES: '{}', HOOKSTREAM_SOURCES_FILE: '/x' }))).toBe(
      'HOOKSTREAM_SOURCES_FILE: set either HOOKSTREAM_SOURCES or HOOKSTREAM_SOURCES_FILE, not both',
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
