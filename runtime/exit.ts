// Ends the process even when `process.exit()` cannot. On its way out Node joins the threads of its libuv
// thread pool, so a call that never returns in one of them holds the exit for ever. The Kafka client's
// binding runs connect, disconnect and the transaction calls there, and librdkafka's close or destroy of a
// client abandoned while the broker was away can block without end (confluentinc/librdkafka#4519); CI once
// saw `process.exit()` not end the router for 35 s after a clean close. No JavaScript runs once exit has
// begun, so the guard is a small process started just before it: it waits for this one's end (its stdin,
// a pipe only this process holds, closes), and kills it if that has not come within the bound.
import { spawn } from 'node:child_process';

/** How long `process.exit()` may take before the guard kills the process. */
export const EXIT_BOUND_MS = 10_000;

// Run by `node -e`: argv[1] is the pid to guard, argv[2] the bound. The end of stdin is the guarded
// process's end, so a pid reused later can never be hit.
const GUARD = `
const [pid, boundMs] = process.argv.slice(1).map(Number);
const kill = setTimeout(() => { try { process.kill(pid, 'SIGKILL'); } catch {} }, boundMs);
process.stdin.on('end', () => clearTimeout(kill)).resume();
`;

/**
 * `process.exit(code)`, guarded: if the process has not ended `boundMs` after, it is killed (SIGKILL, so
 * its parent sees exit status 137 rather than `code`). Inside a container whose first process is node,
 * a kill from within cannot end it; the orchestrator's own kill after its grace period does.
 */
export function exitProcess(code?: number, boundMs = EXIT_BOUND_MS): never {
  guardExit(boundMs);
  process.exit(code);
}

/** Starts the guard that kills this process if it is still running `boundMs` from now; its pid, if it started. */
export function guardExit(boundMs = EXIT_BOUND_MS): number | undefined {
  try {
    const guard = spawn(process.execPath, ['-e', GUARD, String(process.pid), String(boundMs)], {
      stdio: ['pipe', 'ignore', 'ignore'],
      detached: true,
      // A NODE_OPTIONS meant for hookledger (a loader, a heap size) is not the guard's.
      env: { PATH: process.env.PATH ?? '' },
    });
    guard.on('error', () => undefined);
    // The guard does not keep this process running (nor does the pipe to it: nothing is read or written there).
    guard.unref();
    return guard.pid;
  } catch {
    // Out of processes or memory: the plain exit, as before.
    return undefined;
  }
}
