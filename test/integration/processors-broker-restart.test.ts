// The only broker restarted while the dedupe-router commits, the router a real child process: afterwards
// every partition moves again, and nothing is lost or duplicated (broker-bounce.ts). Down longer than the
// session: the faults lane's processors-faults-recovery.test.ts.
import type { ChildProcess } from 'node:child_process';
import { afterEach, describe, it } from 'vitest';
import type { DedicatedBroker } from '../helpers/stack.js';
import { brokerBounce, TEST_TIMEOUT_MS } from './broker-bounce.js';

describe('the dedupe-router while its broker restarts', () => {
  const children: ChildProcess[] = [];
  let broker: DedicatedBroker | undefined;
  afterEach(async () => {
    for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
    await broker?.dispose();
    broker = undefined;
  });

  it(
    'the only broker restarted while it commits: afterwards every partition moves again, nothing lost or duplicated',
    () =>
      brokerBounce(0, {
        children,
        brokerStarted: (started) => {
          broker = started;
        },
      }),
    TEST_TIMEOUT_MS,
  );
});
