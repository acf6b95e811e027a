// Task state directories under a temporary root for unit tests, all closed and removed after each test.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { TaskStateDir } from '../../runtime/streams/state-dir.js';

/** Call at the top of a test file: returns a function opening a task directory under a fresh root. */
export function useTempStateDirs(): {
  root: () => string;
  open: (partition?: number, root?: string) => TaskStateDir;
} {
  const opened: TaskStateDir[] = [];
  const roots: string[] = [];
  const root = () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookledger-state-'));
    roots.push(dir);
    return dir;
  };
  afterEach(async () => {
    for (const dir of opened.splice(0)) await dir.close();
    for (const dir of roots.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  return {
    root,
    open: (partition = 0, at = root()) => {
      const dir = new TaskStateDir({
        root: at,
        appId: 'app',
        instanceId: 'i1',
        topic: 'webhooks.raw',
        partition,
      });
      opened.push(dir);
      return dir;
    },
  };
}
