// `hookledger simulate`: behaves like the platform's webhook sender against an ingest (or any URL).
import { writeFile } from 'node:fs/promises';
import { formatDuration } from '../../../runtime/duration.js';
import { type GraphqlApi, serveGraphqlApi } from '../../simulate/graphql-api.js';
import { INVALID_KINDS, INVALID_REASONS } from '../../simulate/invalid.js';
import { parseSimulateArgs } from '../../simulate/options.js';
import { misconfigurationHint, progressLine, summaryJson, summaryLine } from '../../simulate/report.js';
import { createSimulation } from '../../simulate/simulation.js';
import { type Command, CommandFailed } from '../command.js';

// The invalid kinds' stories, one per line under --invalid-rate: help and generator cannot drift apart.
const INVALID_LIST = INVALID_REASONS.map(
  (reason) => `                             ${reason}: ${INVALID_KINDS[reason].story}`,
).join('\n');

const HELP = `usage: hookledger simulate (--source <name> | --url <url>) [options]

Sends webhooks the way the platform does: every trigger of the contract, the energy switch Full, Minimal
and Latest-commission queries, OperationFailure results; signed with HMAC-SHA1 (X-Signature); a
non-200 or a timeout is retried (same webhook id) until the retry window ends, 72h as the platform's.
The platform does not say how long it waits between retries: the exponential back-off is this tool's.
On request, some webhooks are sent twice, out of order, or invalid (signed, so ingest stores them, but
the router dead-letters them). Stop with Ctrl-C. Prints progress on stderr and a summary on stdout:
  sent 300 webhooks in 360 deliveries: acknowledged 300, retried 60 (duplicates sent on purpose 60,
  after a failure 0), gave up 0, invalid 15, OperationFailure 15
With --count, each rate is an exact share of the webhooks, rounded: --count 300 --invalid-rate 0.05
sends exactly 15 invalid ones (without --count, each webhook draws on its own). Exits non-zero if any
webhook was given up.

options:
  --source <name>          post to http://127.0.0.1:8080/webhooks/<name>
  --url <url>              post here instead (may carry a query string)
  --key <key>              the source's shared key (also HOOKLEDGER_SIMULATE_KEY)
  --key-file <path>        read the key from a file
  --unsigned               send no X-Signature (a source declared "signature": "none")
  --count <n>              webhooks to send (default: until stopped); duplicates and retries come on top
  --rate <n/s>             new deliveries (webhooks and duplicates) per second: 10, 10/s, 600/m or
                           unlimited (default 10/s); retries after a failure are not held back
  --concurrency <n>        requests open at once (default 8)
  --timeout <duration>     an attempt without an answer by then has failed (default and at most 30s,
                           the platform's; lower, as the platform can be configured)
  --retry-window <d>       retries stop this long after the first attempt (default and at most 72h,
                           the platform's; shorter to compress a run, e.g. 10s for tests)
  --backoff <duration>     wait before the first retry, doubling after each (default 1s, jittered)
  --max-backoff <d>        the wait between retries grows no longer than this (default 1h)
  --duplicate-rate <0..1>  share of webhooks sent again once acknowledged, as the platform may (same
                           id): byte for byte, or re-serialized with another key order and whitespace
                           and signed anew (default 0); the router keeps the first of each id
  --reorder-rate <0..1>    share of webhooks sent after 1-3 newer ones (default 0)
  --failure-rate <0..1>    share of webhooks whose query answers OperationFailure (an id not found):
                           the router sends them to webhooks.failures (default 0.02). UserDeleted is
                           answered so too, as a deletion, and is not counted here
  --invalid-rate <0..1>    share of webhooks the router dead-letters to webhooks.dlq, one reason after
                           the other (default 0):
${INVALID_LIST}
  --other-triggers <list>  operator-enabled triggers sent now and then (default PaymentAdded,
                           InvoiceAdded,MeterReadingAdded; "" for none)
  --seed <text>            repeat a run's webhooks (ids, entities, values); printed at the start
  --start <date-time>      webhook.date of the first webhook; with --seed, same bytes (default now,
                           and then no webhook is dated after it is sent). With a zone
                           (2026-11-01T09:00:00Z), or a date (UTC midnight)
  --ids-file <path>        write the acknowledged webhook ids there, one per line
  --minimal-rate <0..1>    send that share of energy-switch deliveries with the Minimal query (the rest
                           Full), name this simulator's own GraphQL API in their query.api, and serve it:
                           POST /v1/graphql answers the Full query for every switch sent (docs/enrich.md)
  --api-port <port>        where that API listens on 127.0.0.1 (default 8089: what \`start\`'s enrich
                           stage is allowed to fetch from)
  --api-failure-rate <0..1> share of API requests answered 429, 500 or never (a third each; default 0)
  --api-linger <duration>  after the last webhook, keep answering until each thin delivery's switch was
                           fetched, or no request came for this long (default 10s)
  --json                   print the summary as JSON
  -h, --help               this text`;

/** The signals that stop a run cleanly, each once. */
export const STOP_SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM'];

export interface SimulateIo {
  stdout: { write(text: string): unknown; isTTY?: boolean };
  stderr: { write(text: string): unknown; isTTY?: boolean };
  env: NodeJS.ProcessEnv;
  /** Stops the run (Ctrl-C); the command listens to SIGINT and SIGTERM itself when none is given. */
  signal?: AbortSignal;
  /** How often a progress line is written when stderr is not a terminal, ms. */
  progressEveryMs?: number;
}

/** Runs the command with its input and output injected (tests run it in-process). */
export async function runSimulate(args: string[], io: SimulateIo): Promise<number> {
  const { simulation: parsed, json, idsFile, api: apiOptions } = parseSimulateArgs(args, io.env);
  // Created (emptied) before anything is sent: a path that cannot be written fails now, not after a run
  // of hours whose acknowledged ids would then be lost.
  if (idsFile !== undefined) await writeIds(idsFile, []);
  const api =
    apiOptions === undefined
      ? undefined
      : await serveGraphqlApi({
          port: apiOptions.port,
          failureRate: apiOptions.failureRate,
          seed: parsed.seed,
        }).catch((error: unknown) => {
          throw new CommandFailed(
            `--api-port: cannot listen on 127.0.0.1:${apiOptions.port} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
          );
        });
  const options =
    api === undefined
      ? parsed
      : { ...parsed, generator: { ...parsed.generator, api: api.url, onSwitch: api.record } };
  if (api !== undefined) io.stderr.write(`serving the platform's GraphQL API at ${api.url}\n`);
  const controller = new AbortController();
  const stop = () => controller.abort();
  io.signal?.addEventListener('abort', stop, { once: true });
  const ownSignal = io.signal === undefined;
  // First Ctrl-C (or SIGTERM, a `kill` or a container stop): stop sending, print the summary and write
  // --ids-file; a second one ends the process as usual.
  const onSignal = (signal: NodeJS.Signals) => {
    process.off(signal, onSignal);
    stop();
  };
  if (ownSignal) for (const signal of STOP_SIGNALS) process.on(signal, onSignal);

  const tty = io.stderr.isTTY === true;
  io.stderr.write(`simulating the platform → ${options.url} (seed ${options.seed})\n`);
  const hinted = new Set<string>();
  const onAttemptFailed = (failure: string) => {
    const hint = misconfigurationHint(failure, options.key !== undefined);
    if (hint === undefined || hinted.has(failure)) return;
    hinted.add(failure);
    io.stderr.write(tty ? `\r\x1b[K${hint}\n` : `${hint}\n`);
  };
  const simulation = createSimulation(options, { signal: controller.signal, onAttemptFailed });
  const timer = setInterval(
    () => {
      const line = progressLine(simulation.stats, options.count, Date.now());
      io.stderr.write(tty ? `\r${line}\x1b[K` : `${line}\n`);
    },
    tty ? 250 : (io.progressEveryMs ?? 5_000),
  );
  let result: Awaited<ReturnType<typeof simulation.run>>;
  try {
    result = await simulation.run();
    if (api !== undefined && apiOptions !== undefined)
      await lingerWhileAsked(api, apiOptions.lingerMs, controller.signal);
  } finally {
    await api?.close();
    clearInterval(timer);
    if (ownSignal) for (const signal of STOP_SIGNALS) process.off(signal, onSignal);
    io.signal?.removeEventListener('abort', stop);
    if (tty) io.stderr.write('\r\x1b[K');
  }

  io.stdout.write(`${json ? summaryJson(result, options.seed) : summaryLine(result)}\n`);
  if (idsFile !== undefined) await writeIds(idsFile, result.acknowledgedIds);
  if (result.gaveUp > 0) {
    throw new CommandFailed(
      `gave up on ${result.gaveUp} of ${result.webhooks} webhooks at the end of the ${formatDuration(options.policy.windowMs)} retry window (last failure: ${result.lastFailure ?? 'unknown'})`,
    );
  }
  return result.interrupted > 0 || controller.signal.aborted ? 130 : 0;
}

/** Writes the webhook ids to `path`, one per line; a path that cannot be written is one line, not a trace. */
async function writeIds(path: string, ids: readonly string[]): Promise<void> {
  await writeFile(path, ids.map((id) => `${id}\n`).join('')).catch((error: unknown) => {
    throw new CommandFailed(
      `--ids-file: cannot write ${path} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
    );
  });
}

/**
 * Keeps the API up while the enrich stage catches up: until each thin delivery's switch has been answered
 * (a dead-lettered or duplicate delivery is never fetched), or no request came for `lingerMs`.
 */
async function lingerWhileAsked(api: GraphqlApi, lingerMs: number, signal: AbortSignal): Promise<void> {
  while (!signal.aborted && api.unfetched() > 0) {
    const quietFor = Date.now() - api.lastRequestAt();
    if (quietFor >= lingerMs) return;
    await new Promise((resolve) => setTimeout(resolve, Math.min(250, lingerMs - quietFor)));
  }
}

export const command: Command = {
  help: HELP,
  run: (args) => runSimulate(args, { stdout: process.stdout, stderr: process.stderr, env: process.env }),
};
