// `npm run bench:process -- --state-store`: the dedupe-router with its state in memory against on disk
// (PROCESSOR_STATE_STORE=lmdb), alternately over raw topics filled alike, in one run: events/s and CPU
// per event of each, and their ratio (the target: on disk ≥ 0.9× in memory). Prints a Markdown table.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { topicNames } from '../../schemas/topics.js';
import { type Env, log, prefill } from './process-run.js';
import { cpuPerEvent, measure, rate, type ScaleRun } from './process-scale.js';

export async function compareStateStores(
  env: Env,
  options: { ids: number; retries: number; rounds: number; profileDir?: string },
): Promise<void> {
  const kinds = ['memory', 'lmdb'] as const;
  const prefixes: string[] = [];
  const root = mkdtempSync(join(tmpdir(), 'hookledger-bench-state-'));
  const runs: { kind: (typeof kinds)[number]; run: ScaleRun }[] = [];
  try {
    for (let round = 0; round < options.rounds; round++) {
      for (const kind of kinds) {
        const prefix = `bench-state-${randomBytes(3).toString('hex')}.`;
        prefixes.push(prefix);
        log(`producing ${options.ids} ids + ${options.retries} retries to ${topicNames(prefix).raw}`);
        const { records } = await prefill(env, prefix, options.ids, options.retries);
        log(`dedupe-router, state ${kind}…`);
        const run = await measure(
          env,
          prefix,
          1,
          records,
          kind === 'lmdb' ? { PROCESSOR_STATE_STORE: 'lmdb', PROCESSOR_STATE_DIR: join(root, prefix) } : {},
          options.profileDir === undefined ? undefined : join(options.profileDir, `${round}-${kind}`),
        );
        log(`${kind}: ${rate(run).toFixed(0)} events/s, ${cpuPerEvent(run).toFixed(1)} µs CPU/event`);
        runs.push({ kind, run });
      }
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const of = (kind: string) => runs.filter((r) => r.kind === kind).map((r) => r.run);
    const lines = [
      '| state | events/s per run | median events/s | µs CPU/event (median) | 1-min load |',
      '|---|---|---:|---:|---|',
      ...kinds.map((kind) => {
        const rs = of(kind);
        return `| ${kind} | ${rs.map((r) => rate(r).toFixed(0)).join(', ')} | ${median(rs.map(rate)).toFixed(0)} | ${median(rs.map(cpuPerEvent)).toFixed(1)} | ${rs.map((r) => r.load1.toFixed(1)).join(', ')} |`;
      }),
      '',
      `on disk / in memory: ${(median(of('lmdb').map(rate)) / median(of('memory').map(rate))).toFixed(2)}× (median events/s)`,
    ];
    console.log(lines.join('\n'));
  } finally {
    rmSync(root, { recursive: true, force: true });
    const all = await env.admin.listTopics().catch(() => [] as string[]);
    const ours = all.filter((t) => prefixes.some((p) => t.startsWith(p)));
    if (ours.length > 0) await env.admin.deleteTopics(ours).catch(() => undefined);
  }
}
