// `npm run bench:forged`: ingest's resident memory under forged traffic, as issue 19 measured it: 600
// requests to a known source, each with a wrong signature and a 1 MB `webhook.id`, 8 at a time,
// against a real ingest on a local stack. `--root <dir>` runs another checkout's ingest (a before/after
// comparison on the same load); the stack and topics are this checkout's.
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { startBenchStack } from './bench-stack.js';
import { freePort, ROOT, runHookledger, stopChild } from './children.js';
import { sendForged, seriesSum } from './forged-load.js';
import { peakRssMiB, rssMiB } from './proc-stats.js';

const { values: opts } = parseArgs({
  options: {
    requests: { type: 'string', default: '600' },
    concurrency: { type: 'string', default: '8' },
    'id-chars': { type: 'string', default: '1000000' },
    root: { type: 'string', default: ROOT },
  },
});
const KEY = 'bench-forged-key-0123456789abcdef0123';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** /readyz on the ops port, or on the webhook port for a checkout from before the ops port. */
async function ready(bases: string[]): Promise<string> {
  const end = Date.now() + 60_000;
  for (;;) {
    for (const base of bases) {
      const status = await fetch(`${base}/readyz`)
        .then((r) => r.status)
        .catch(() => 0);
      if (status === 200) return base;
    }
    if (Date.now() > end) throw new Error(`ingest not ready at ${bases.join(' or ')}`);
    await sleep(200);
  }
}

const dir = mkdtempSync(join(tmpdir(), 'hookledger-bench-forged-'));
const bench = await startBenchStack();
let child: ChildProcess | undefined;
try {
  const prefix = `bench-forged-${process.pid}.`;
  const env = { ...bench.env, TOPIC_PREFIX: prefix, HOOKLEDGER_LOCAL_STACK: 'true', LOG_LEVEL: 'warn' };
  await runHookledger(['topics', '--local', '--partitions', '1'], env, join(dir, 'topics.log'));
  const [port, opsPort] = [await freePort(), await freePort()];
  const root = resolve(opts.root);
  const output = openSync(join(dir, 'ingest.log'), 'w');
  child = spawn(process.execPath, [join(root, 'tools/cli/hookledger.js'), 'ingest'], {
    cwd: root,
    env: {
      ...process.env,
      ...env,
      INGEST_HOST: '127.0.0.1',
      INGEST_PORT: String(port),
      INGEST_OPS_PORT: String(opsPort),
      HOOKLEDGER_SOURCES: JSON.stringify({ bench: { keys: { k1: KEY } } }),
    },
    stdio: ['ignore', output, output],
  });
  closeSync(output);
  const webhookBase = `http://127.0.0.1:${port}`;
  const opsBase = await ready([`http://127.0.0.1:${opsPort}`, webhookBase]);
  await sleep(3_000);
  const before = rssMiB(child.pid)!;
  const started = Date.now();
  const statuses = await sendForged({
    url: `${webhookBase}/webhooks/bench`,
    requests: Number(opts.requests),
    concurrency: Number(opts.concurrency),
    idChars: Number(opts['id-chars']),
  });
  const seconds = (Date.now() - started) / 1000;
  const after = rssMiB(child.pid)!;
  await sleep(10_000);
  const settled = rssMiB(child.pid)!;
  const metrics = await (await fetch(`${opsBase}/metrics`)).text();
  const result = {
    root,
    statuses: Object.fromEntries(statuses),
    seconds,
    rssMiB: { before, after, settled10s: settled, peak: peakRssMiB(child.pid) },
    failingWebhooks: seriesSum(metrics, 'hookledger_ingest_failing_webhooks'),
  };
  console.log(JSON.stringify(result, null, 2));
} finally {
  if (child) await stopChild(child);
  await bench.stop();
  rmSync(dir, { recursive: true, force: true });
}
