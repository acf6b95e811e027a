// `hookledger --version` answers with package.json's version, however it is asked: the CLI in-process,
// and once as a user runs it (spawned).
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCliInProcess } from '../../helpers/cli-in-process.js';

const root = path.resolve(import.meta.dirname, '../../..');
const bin = path.join(root, 'tools/cli/hookledger.js');
// A spawn starts node with tsx's loader: seconds on a busy machine, beyond vitest's default 5 s.
const SPAWN_TIMEOUT_MS = 30_000;
const { version } = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string };

describe('hookledger --version', () => {
  it.each(['--version', '-v', 'version'])('%s prints the package version and exits 0', async (flag) => {
    const result = await runCliInProcess([flag]);
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toBe(`${version}\n`);
  });

  it(
    'prints it from the process a user starts',
    () => {
      const result = spawnSync(process.execPath, [bin, '--version'], {
        encoding: 'utf8',
        timeout: SPAWN_TIMEOUT_MS,
      });
      expect(result.status, result.stderr).toBe(0);
      expect(result.stdout).toBe(`${version}\n`);
    },
    SPAWN_TIMEOUT_MS,
  );

  it('is named in the overview', async () => {
    expect((await runCliInProcess(['--help'])).stdout).toContain('hookledger --version');
  });
});
