// `hookledger --version` answers with package.json's version, however it is asked, run as a user runs it.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../../..');
const bin = path.join(root, 'tools/cli/hookledger.js');
// Each run starts node with tsx's loader: seconds on a busy machine, beyond vitest's default 5 s.
const SPAWN_TIMEOUT_MS = 30_000;
const { version } = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string };

describe('hookledger --version', () => {
  it.each(['--version', '-v', 'version'])(
    '%s prints the package version and exits 0',
    (flag) => {
      const result = spawnSync(process.execPath, [bin, flag], {
        encoding: 'utf8',
        timeout: SPAWN_TIMEOUT_MS,
      });
      expect(result.status, result.stderr).toBe(0);
      expect(result.stdout).toBe(`${version}\n`);
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'is named in the overview',
    () => {
      const result = spawnSync(process.execPath, [bin, '--help'], {
        encoding: 'utf8',
        timeout: SPAWN_TIMEOUT_MS,
      });
      expect(result.stdout).toContain('hookledger --version');
    },
    SPAWN_TIMEOUT_MS,
  );
});
