// A misspelled variable is warned about, not silently ignored; everything hookledger reads is known.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  KNOWN_VARIABLES,
  renamedVariable,
  renamedVariableLines,
  unknownVariableLine,
  unknownVariables,
  VARIABLE_PREFIXES,
} from '../../../runtime/known-variables.js';

const root = resolve(import.meta.dirname, '../../..');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

describe('variables with a hookledger prefix', () => {
  it('names the one meant for a misspelling', () => {
    expect(unknownVariables(['HOOKLEDGER_SOURCS', 'PATH', 'KAFKA_BROKERS'])).toEqual([
      { variable: 'HOOKLEDGER_SOURCS', suggestion: 'HOOKLEDGER_SOURCES' },
    ]);
    expect(unknownVariableLine({ variable: 'HOOKLEDGER_SOURCS', suggestion: 'HOOKLEDGER_SOURCES' })).toBe(
      'HOOKLEDGER_SOURCS is not a hookledger variable (did you mean HOOKLEDGER_SOURCES?): ignored',
    );
    expect(unknownVariables(['INGEST_TIMEOUT_SECONDS_FOR_ALL'])).toEqual([
      { variable: 'INGEST_TIMEOUT_SECONDS_FOR_ALL' },
    ]);
  });

  it("reads the project's old names for the sources in place of unset new ones, with one warning each", () => {
    expect(renamedVariable({ HOOKSTREAM_SOURCES: '{}' }, 'HOOKLEDGER_SOURCES')).toEqual({
      variable: 'HOOKSTREAM_SOURCES',
      value: '{}',
    });
    expect(
      renamedVariable({ HOOKLEDGER_SOURCES: '{"a":1}', HOOKSTREAM_SOURCES: '{}' }, 'HOOKLEDGER_SOURCES'),
    ).toEqual({ variable: 'HOOKLEDGER_SOURCES', value: '{"a":1}' });
    expect(renamedVariable({ HOOKSTREAM_SOURCES: '' }, 'HOOKLEDGER_SOURCES')).toBeUndefined();
    expect(renamedVariableLines({ HOOKSTREAM_SOURCES_FILE: '/etc/s.json', PATH: '/bin' })).toEqual([
      'HOOKSTREAM_SOURCES_FILE is the old name of HOOKLEDGER_SOURCES_FILE: read as HOOKLEDGER_SOURCES_FILE for now, rename it',
    ]);
    expect(renamedVariableLines({ HOOKSTREAM_SOURCES: '{}', HOOKLEDGER_SOURCES: '{}' })).toEqual([
      'HOOKSTREAM_SOURCES is the old name of HOOKLEDGER_SOURCES: ignored (HOOKLEDGER_SOURCES set), remove it',
    ]);
    // A new name of either variable set: the old names are ignored together.
    expect(
      renamedVariable({ HOOKSTREAM_SOURCES: '{}', HOOKLEDGER_SOURCES_FILE: '/s' }, 'HOOKLEDGER_SOURCES'),
    ).toBeUndefined();
    expect(renamedVariableLines({ HOOKSTREAM_SOURCES: '{}', HOOKLEDGER_SOURCES_FILE: '/s' })).toEqual([
      'HOOKSTREAM_SOURCES is the old name of HOOKLEDGER_SOURCES: ignored (HOOKLEDGER_SOURCES_FILE set), remove it',
    ]);
    expect(renamedVariableLines({ HOOKLEDGER_SOURCES: '{}' })).toEqual([]);
  });

  it('leaves alone what Kubernetes sets for a Service named kafka or hookledger-ingest', () => {
    expect(
      unknownVariables([
        'KAFKA_PORT',
        'KAFKA_SERVICE_HOST',
        'KAFKA_SERVICE_PORT',
        'KAFKA_PORT_9092_TCP',
        'KAFKA_PORT_9092_TCP_ADDR',
        'HOOKLEDGER_INGEST_SERVICE_PORT_HTTP',
      ]),
    ).toEqual([]);
  });

  it('knows every such variable the sources read', () => {
    const read = new Set<string>();
    const files = [
      ...['ingest', 'processors', 'runtime', 'schemas', 'tools', 'test/helpers'].flatMap((dir) =>
        sourceFiles(join(root, dir)),
      ),
      join(root, 'tools/cli/hookledger.js'),
    ];
    for (const file of files) {
      if (file.includes(join('tools', 'bench'))) continue;
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(/\benv(?:\.|\[')([A-Z][A-Z0-9_]+)/g)) read.add(m[1]!);
    }
    const ours = [...read].filter((name) => VARIABLE_PREFIXES.some((prefix) => name.startsWith(prefix)));
    expect(ours.length).toBeGreaterThan(10);
    expect(ours.filter((name) => !KNOWN_VARIABLES.has(name))).toEqual([]);
  });
});
