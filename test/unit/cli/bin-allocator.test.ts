// tools/cli/hookledger, the `hookledger` npm links: it preloads jemalloc where the machine has it and runs
// hookledger.js beside it. Each case runs the script with a stand-in `node` first on PATH, which prints
// the LD_PRELOAD it was given and its arguments, so nothing is started.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../../..');
const wrapper = join(root, 'tools', 'cli', 'hookledger');
const dir = mkdtempSync(join(tmpdir(), 'hookledger-bin-test-'));
const fakeBin = join(dir, 'bin');
mkdirSync(fakeBin);
writeFileSync(
  join(fakeBin, 'node'),
  '#!/bin/sh\nprintf "LD_PRELOAD=%s\\n" "$LD_PRELOAD"\nfor a in "$@"; do printf "arg=%s\\n" "$a"; done\n',
);
chmodSync(join(fakeBin, 'node'), 0o755);
// An empty file stands for the library: the wrapper only checks that it can be read.
const library = join(dir, 'libjemalloc.so.2');
writeFileSync(library, '');

afterAll(() => rmSync(dir, { recursive: true, force: true }));

function run(env: Record<string, string>, args: string[] = ['--version'], file = wrapper) {
  const result = spawnSync(file, args, {
    encoding: 'utf8',
    env: { PATH: `${fakeBin}:/usr/bin:/bin`, ...env },
    timeout: 10_000,
  });
  const lines = result.stdout.split('\n');
  return {
    status: result.status,
    stderr: result.stderr,
    preload: lines.find((l) => l.startsWith('LD_PRELOAD='))?.slice('LD_PRELOAD='.length),
    args: lines.filter((l) => l.startsWith('arg=')).map((l) => l.slice('arg='.length)),
  };
}

describe('the hookledger command (tools/cli/hookledger)', () => {
  it('preloads the library HOOKLEDGER_MALLOC names and passes every argument on to hookledger.js', () => {
    const result = run({ HOOKLEDGER_MALLOC: library }, ['tail', 'entity.user', '--from', 'a b']);
    expect(result.status, result.stderr).toBe(0);
    expect(result.preload).toBe(library);
    expect(result.args).toEqual([
      join(root, 'tools', 'cli', 'hookledger.js'),
      'tail',
      'entity.user',
      '--from',
      'a b',
    ]);
  });

  it('keeps a preload already set, ahead of which it puts jemalloc', () => {
    expect(run({ HOOKLEDGER_MALLOC: library, LD_PRELOAD: '/opt/other.so' }).preload).toBe(
      `${library} /opt/other.so`,
    );
  });

  it('preloads jemalloc once: a hookledger started by another keeps what it was given', () => {
    const given = '/usr/lib/x86_64-linux-gnu/libjemalloc.so.2';
    expect(run({ HOOKLEDGER_MALLOC: library, LD_PRELOAD: given }).preload).toBe(given);
  });

  it('uses the C library malloc with HOOKLEDGER_MALLOC=system', () => {
    const result = run({ HOOKLEDGER_MALLOC: 'system' });
    expect(result.status, result.stderr).toBe(0);
    expect(result.preload).toBe('');
  });

  it('by default, preloads the jemalloc the machine has, or nothing', () => {
    const known = [
      '/usr/lib/x86_64-linux-gnu/libjemalloc.so.2',
      '/usr/lib/aarch64-linux-gnu/libjemalloc.so.2',
      '/usr/lib64/libjemalloc.so.2',
      '/usr/lib/libjemalloc.so.2',
      '/usr/local/lib/libjemalloc.so.2',
    ];
    const result = run({});
    expect(result.status, result.stderr).toBe(0);
    expect(result.preload).toBe(known.find((path) => existsSync(path)) ?? '');
  });

  it('refuses a value it does not know, and a library that is not there, with one line and exit 2', () => {
    const bogus = run({ HOOKLEDGER_MALLOC: 'tcmalloc' });
    expect(bogus.status).toBe(2);
    expect(bogus.stderr).toMatch(
      /^hookledger: HOOKLEDGER_MALLOC must be `jemalloc`, `system` or .*\(got tcmalloc\)\n$/,
    );
    expect(bogus.args).toEqual([]);
    const missing = run({ HOOKLEDGER_MALLOC: join(dir, 'missing.so') });
    expect(missing.status).toBe(2);
    expect(missing.stderr).toMatch(/HOOKLEDGER_MALLOC=.*missing\.so: no such file/);
  });

  it('finds hookledger.js beside itself when run through a link, as npm links bins', () => {
    const link = join(dir, 'linked-hookledger');
    symlinkSync(wrapper, link);
    const result = run({ HOOKLEDGER_MALLOC: 'system' }, ['--version'], link);
    expect(result.args[0]).toBe(join(root, 'tools', 'cli', 'hookledger.js'));
  });
});
