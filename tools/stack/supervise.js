// Runs one JVM on behalf of an owner process and stops it when the owner goes away, however it goes.
//
//   node supervise.js <pid-file> <grace-ms> <command> [args…]
//
// The owner holds the write end of our stdin. When the owner exits — normally, on Ctrl-C, or killed
// with SIGKILL, which no handler in the owner can catch — the kernel closes that pipe and we read EOF:
// then we send the JVM SIGTERM (a clean shutdown), and SIGKILL after <grace-ms>. SIGTERM, SIGINT and
// SIGHUP sent to us do the same. We exit with the JVM's status once it is gone, and write its pid to
// <pid-file> (removed again at exit) so the owner and tests can see exactly which process to check.
// Plain JavaScript on purpose: it starts with bare `node`, without a TypeScript loader.
import { spawn } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';

const [pidFile, graceText, command, ...args] = process.argv.slice(2);
const graceMs = Number(graceText);
if (!pidFile || !command || !Number.isFinite(graceMs)) {
  process.stderr.write('usage: node supervise.js <pid-file> <grace-ms> <command> [args…]\n');
  process.exit(2);
}

// The JVM's stdout and stderr are ours: the owner points them at the log file.
const child = spawn(command, args, { stdio: ['ignore', 'inherit', 'inherit'] });
let stopping = false;

child.once('spawn', () => writeFileSync(pidFile, `${child.pid}\n`));
child.once('error', (error) => {
  process.stderr.write(`supervise: cannot start ${command}: ${error.message}\n`);
  process.exit(127);
});
child.once('exit', (code, signal) => {
  rmSync(pidFile, { force: true });
  if (!stopping && code !== 0) {
    process.stderr.write(`supervise: ${command} exited on its own (${signal ?? `status ${code}`})\n`);
  }
  process.exit(code ?? 128 + (signal === 'SIGKILL' ? 9 : 15));
});

function stop() {
  if (stopping) return;
  stopping = true;
  child.kill('SIGTERM');
  // Not unref'd: this process must stay alive until the JVM is really gone.
  setTimeout(() => child.kill('SIGKILL'), graceMs);
}

process.stdin.on('data', () => {}); // nothing is ever sent; reading is how EOF becomes visible
process.stdin.once('end', stop);
process.stdin.once('error', stop);
process.stdin.once('close', stop);
for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(signal, stop);
