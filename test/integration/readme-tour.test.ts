// The README's five-minute tour, as a new user runs it: its commands parsed from README.md (so the two
// cannot drift), each typed into a new shell (no KAFKA_BROKERS, no SCHEMA_REGISTRY_URL) in a fresh
// directory where `npx hookledger` is this checkout, against its own `start` and the local stack that
// start runs (not the shared test stack); each comment's promise is checked.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { INVALID_REASONS } from '../../tools/simulate/invalid.js';
import { readStackRecord } from '../../tools/stack/index.js';
import { runCliInProcess } from '../helpers/cli-in-process.js';
import { metricSum } from '../helpers/metric-sum.js';
import { leadingCount, type TourStep, tourSteps } from '../helpers/readme-tour.js';
import {
  cleanUp,
  freePort,
  listening,
  NOT_IN_A_NEW_SHELL,
  openTerminal,
  processesIn,
  type Ran,
  runInShell,
  sleep,
  stoppedByCtrlC,
  type Terminal,
  type UserDir,
  userDir,
} from '../helpers/user-shell.js';

const README = readFileSync(resolve(import.meta.dirname, '../../README.md'), 'utf8');

/** How long the processors may take to catch up where a person would wait a few seconds. */
const CATCH_UP_MS = 60_000;
/** start on a machine whose two cores other tests share: the stack's JVMs, topics, schemas. */
const START_MS = 240_000;

const ENTITY_STREAMS = ['user', 'account', 'document', 'todo', 'energy-switch', 'other'].map(
  (s) => `entity.${s}`,
);

interface Line {
  key: string | null;
  value: Record<string, unknown> | null;
  headers?: Record<string, string>;
}

const linesOf = (stdout: string): Line[] =>
  stdout
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Line);

/** A `.latest` row that carries a field only a Full answer has. */
const hasPostcode = (line: Line) =>
  typeof (line.value?.fields as Record<string, unknown> | undefined)?.postcode === 'string';

/** A text to find as it is written. */
const literal = (text: string) => new RegExp(text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));

/** The status line a terminal-1 comment quotes ("received 360 · …"), which start must reach. */
const quotedStatus = (comment: string) => /"((?:received|routed) \d+[^"]*)"/.exec(comment)?.[1];

/** Reruns `run` until `done` holds of its result, at most `ms`; returns the last result. */
async function poll<T>(run: () => Promise<T>, done: (value: T) => boolean, ms = CATCH_UP_MS): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await run();
    if (done(value) || Date.now() > deadline) return value;
    await sleep(500);
  }
}

/**
 * `hookledger tail <topic> --from-beginning` run inside this process against the stack `start` runs
 * in `dir`: the test's own looks between the README's steps. The README's commands themselves are
 * typed into a new shell; these reads are not in the README, and a spawn each (an npx, a node, tsx)
 * cost the tour about a third of its time.
 */
async function tailInProcess(dir: string, topic: string): Promise<Line[]> {
  const asInANewShell = Object.fromEntries(NOT_IN_A_NEW_SHELL.map((name) => [name, undefined]));
  const ran = await runCliInProcess(['tail', topic, '--from-beginning'], {
    ...asInANewShell,
    HOOKLEDGER_STATE_DIR: resolve(dir, '.hookledger/stack'),
  });
  expect(ran.status, `tail ${topic}:\n${ran.stderr}`).toBe(0);
  return linesOf(ran.stdout);
}

describe("the README's five-minute tour, copied into a new shell", () => {
  let user: UserDir | undefined;
  let terminal1: Terminal | undefined;
  const ports = { ingest: 0, ingestOps: 0, processors: 0 };

  afterAll(async () => {
    // Whatever happened, nothing stays: a JVM or a start left behind is stopped, then fails the test.
    if (user) expect(await cleanUp(user, terminal1)).toEqual([]);
  }, 180_000);

  it(
    'every command works as written and shows what its comment says',
    async () => {
      const steps = tourSteps(README);
      user = await userDir('hookledger-tour-');
      ports.ingest = await freePort();
      ports.ingestOps = await freePort();
      ports.processors = await freePort();
      const shell = user;

      let ingestBase = '';
      let key = '';
      /** What `start` prints (the URL and the key), then the state `start` keeps in `.hookledger`. */
      const startIn1 = async (step: TourStep) => {
        // Other tests may hold 8080 and 9090: this start gets free ports, and the URL it prints
        // replaces the README's, as a person copies the URL their start printed.
        terminal1 = openTerminal(step.command, shell, {
          INGEST_PORT: String(ports.ingest),
          INGEST_OPS_PORT: String(ports.ingestOps),
          PROCESSOR_PORT: String(ports.processors),
        });
        const [, url] = await terminal1.waitFor(/(https?:\/\/\S+)\/webhooks\/local\b/, START_MS);
        await terminal1.waitFor(/Ctrl-C/, 10_000);
        ingestBase = url!;
        const sources = JSON.parse(readFileSync(resolve(shell.dir, '.hookledger/sources.json'), 'utf8'));
        key = sources.local.keys.dev as string;
        expect(terminal1.output(), 'start prints the key for the next line').toContain(key);
      };

      const typed = (step: TourStep) =>
        step.command
          .replaceAll('<key>', key)
          .replace(/https?:\/\/127\.0\.0\.1:8080(?=\/webhooks\/)/g, ingestBase);
      const run = async (command: string): Promise<Ran> => {
        const ran = await runInShell(command, shell);
        expect(ran.code, `\`${command}\`:\n${ran.stdout}\n${ran.stderr}`).toBe(0);
        return ran;
      };
      const tail = (topic: string) => tailInProcess(shell.dir, topic);
      const metrics = async () => (await fetch(`http://127.0.0.1:${ports.processors}/metrics`)).text();

      /** The zone-less deliveries' ids, from the DLQ, and how often each is in the entity streams. */
      let zoneless: string[] = [];
      const inEntityStreams = async () => {
        const lines: Line[] = [];
        for (const stream of ENTITY_STREAMS) lines.push(...(await tail(stream)));
        return zoneless.map((id) => lines.filter((l) => l.value?.webhookId === id).length);
      };

      const seen: string[] = [];
      let started = 0;
      /** What the running start's status line must reach before Ctrl-C, as its comment says. */
      let statusToReach: string | undefined;
      const reachStatus = async () => {
        if (statusToReach !== undefined) await terminal1!.waitFor(literal(statusToReach), CATCH_UP_MS);
      };
      for (const step of steps) {
        seen.push(step.command);
        const { command, comment } = step;
        if (step.terminal === 1) {
          if (started > 0) {
            // Terminal 1: Ctrl-C (the comment says so), and start stops all it started.
            expect(comment).toMatch(/Ctrl-C/);
            await reachStatus();
            const stackRecord = readStackRecord(resolve(shell.dir, '.hookledger/stack'));
            expect(stoppedByCtrlC(await terminal1!.interrupt()), terminal1!.output()).toBe(true);
            expect(terminal1!.output()).toMatch(/\bstopped\b/);
            expect(await processesIn(shell.dir)).toEqual([]);
            for (const broker of stackRecord?.brokers ?? []) {
              const [host, port] = broker.split(':');
              expect(await listening(host!, Number(port)), `${broker} after Ctrl-C`).toBe(false);
            }
            expect(await listening('127.0.0.1', ports.ingest)).toBe(false);
          }
          await startIn1(step);
          statusToReach = quotedStatus(comment);
          started++;
          continue;
        }
        const counted = /\| wc -l$/.test(command) ? leadingCount(comment) : undefined;
        if (counted !== undefined) {
          // Counted once the processors have caught up, as a person would look again: waited for in
          // this process, then the README's line runs and must print the count.
          const topic = /\btail (\S+)/.exec(command)![1]!;
          await poll(
            () => tail(topic),
            (lines) => lines.length >= counted,
          );
        }
        const ran = await run(typed(step));

        if (/\bsimulate\b/.test(command)) {
          // The line it ends with, as the comment quotes it ("(…)" stands for the details).
          const [, quoted] = /"(sent [^"]+)"/.exec(comment) ?? [];
          expect(quoted, comment).toBeDefined();
          const pattern = quoted!
            .split('(…)')
            .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
            .join('\\([^)]*\\)');
          expect(ran.stdout).toMatch(new RegExp(pattern));
          // The thin-webhooks step: its deliveries are routed like any, the status line says how far.
          if (/--minimal-rate/.test(command)) statusToReach = quotedStatus(comment);
        } else if (/\| wc -l$/.test(command)) {
          expect(counted, `the comment of \`${command}\` starts with its count`).toBeDefined();
          expect(Number(ran.stdout.trim()), command).toBe(counted);
        } else if (/\btail webhooks\.raw\b.*--limit (\d+)/.test(command)) {
          const limit = Number(/--limit (\d+)/.exec(command)![1]);
          const lines = linesOf(ran.stdout);
          expect(lines).toHaveLength(limit);
          for (const line of lines) expect(line.value?.webhookId).toBe(line.key);
        } else if (/\btail entity\.[\w-]+\.latest\b/.test(command)) {
          // A table: one line per key, every key the stream has.
          expect(comment).toMatch(/one line each/);
          const stream = /tail (entity\.[\w-]+)\.latest/.exec(command)![1]!;
          const rows = linesOf(ran.stdout).map((l) => l.key);
          const keys = new Set((await tail(stream)).map((l) => l.key));
          expect(rows.length).toBeGreaterThan(0);
          expect(new Set(rows).size).toBe(rows.length);
          expect(new Set(rows)).toEqual(keys);
          if (/fetched/.test(comment)) {
            // The switches delivered thin, naming the simulator's API: one fetched event each, and a
            // row with the fields the Minimal query left out.
            const events = await poll(
              () => tail('entity.energy-switch'),
              (lines) => {
                const thin = lines.filter((l) => String(l.value?.queryApi).startsWith('http://127.0.0.1:'));
                const fetched = lines.filter((l) => l.value?.origin === 'fetched');
                return thin.length > 0 && fetched.length === thin.length - fetched.length;
              },
            );
            const delivered = events.filter(
              (l) =>
                l.value?.origin === 'delivery' && String(l.value?.queryApi).startsWith('http://127.0.0.1:'),
            );
            const fetched = events.filter((l) => l.value?.origin === 'fetched');
            expect(delivered.length).toBeGreaterThan(0);
            expect(fetched.map((l) => l.value?.webhookId).sort()).toEqual(
              delivered.map((l) => `${l.value?.webhookId}#fetched`).sort(),
            );
            const table = await poll(
              () => tail(`${stream}.latest`),
              (lines) => delivered.every((d) => lines.some((l) => l.key === d.key && hasPostcode(l))),
            );
            for (const d of delivered)
              expect(
                table.some((l) => l.key === d.key && hasPostcode(l)),
                String(d.key),
              ).toBe(true);
          }
        } else if (/\btail webhooks\.dlq\b/.test(command)) {
          // "the 15 invalid ones …: 3 for each of 5 reasons"
          const [, total] = /the (\d+) invalid/.exec(comment) ?? [];
          const [, each, reasons] = /(\d+) for each of (\d+) reasons/.exec(comment) ?? [];
          expect([total, each, reasons], comment).not.toContain(undefined);
          const letters = linesOf(ran.stdout);
          expect(letters).toHaveLength(Number(total));
          const byReason = new Map<string, number>();
          for (const l of letters)
            byReason.set(String(l.value?.reason), (byReason.get(String(l.value?.reason)) ?? 0) + 1);
          expect(byReason.size).toBe(Number(reasons));
          expect(Object.fromEntries(byReason)).toEqual(
            Object.fromEntries(INVALID_REASONS.map((reason) => [reason, Number(each)])),
          );
          zoneless = letters
            .filter((l) => l.value?.reason === 'webhook-date-invalid')
            .map((l) => String(l.value?.webhookId));
        } else if (/\breplay diff\b/.test(command)) {
          expect(comment).toMatch(/clean/);
          expect(`${ran.stdout}${ran.stderr}`).toMatch(/clean|equal/i);
        } else if (/\breplay\b.*--id (\S+)/.test(command)) {
          const id = /--id (\S+)/.exec(command)![1];
          expect(`${ran.stdout}${ran.stderr}`).toContain(`replay-${id}`);
        } else if (/\btail (entity\.[\w-]+)\.replay-(\S+)/.test(command)) {
          // Side by side with the live stream: the same records, keys in the same order per key.
          const live = /tail (entity\.[\w-]+)\.replay-/.exec(command)![1]!;
          const rebuilt = linesOf(ran.stdout);
          expect(rebuilt.length).toBeGreaterThan(0);
          expect(rebuilt.length).toBe((await tail(live)).length);
        } else if (/\bredrive\b.*--dry-run/.test(command)) {
          const count = Number(/would send (\d+)/.exec(comment)![1]);
          expect(ran.stdout).toMatch(new RegExp(`would send\\s+${count}\\b`));
          expect(await inEntityStreams()).toEqual(zoneless.map(() => 0));
        } else if (/\bredrive\b/.test(command)) {
          const count = Number(/sent (\d+)/.exec(comment)![1]);
          expect(ran.stdout).toMatch(new RegExp(`sent\\s+${count}\\b`));
          expect(zoneless).toHaveLength(count);
          if (!/duplicates/.test(comment)) {
            // The fixed router sends each to its entity stream once start is back.
            const counts = await poll(inEntityStreams, (c) => c.every((n) => n >= 1));
            expect(counts).toEqual(zoneless.map(() => 1));
          } else {
            // Sent again, dropped as duplicates by the router: nothing new anywhere.
            const page = await poll(
              metrics,
              (p) => metricSum(p, 'hookledger_dedupe_duplicates_total') >= count,
            );
            expect(metricSum(page, 'hookledger_dedupe_duplicates_total')).toBe(count);
            statusToReach = quotedStatus(comment);
            expect(await inEntityStreams()).toEqual(zoneless.map(() => 1));
          }
          // Nothing is dead-lettered again after the fix.
          const letters = await tail('webhooks.dlq');
          expect(letters.filter((l) => l.value?.reason === 'webhook-date-invalid')).toHaveLength(count);
        } else {
          throw new Error(`the tour has a step this test does not check yet: ${command} # ${comment}`);
        }
      }
      expect(started, 'start, then start again with the fix').toBe(2);
      expect(zoneless.length).toBeGreaterThan(0);
      expect(statusToReach, 'the status line the tour ends at').toBeDefined();

      // Ctrl-C at the end: everything start ran stops, nothing is left behind.
      await reachStatus();
      const stackRecord = readStackRecord(resolve(shell.dir, '.hookledger/stack'));
      expect(stoppedByCtrlC(await terminal1!.interrupt()), terminal1!.output()).toBe(true);
      expect(await processesIn(shell.dir)).toEqual([]);
      for (const broker of stackRecord?.brokers ?? []) {
        const [host, port] = broker.split(':');
        expect(await listening(host!, Number(port))).toBe(false);
      }
      expect(seen.length).toBe(steps.length);
    },
    20 * 60_000,
  );
});
