// Starting again is always safe, and commands find the local stack without variables: `stack up`,
// `topics` and `stack down`, as a person runs them, several times over one state dir.
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createSerde } from '../../schemas/serde.js';
import { readStackRecord } from '../../tools/stack/index.js';

const bin = resolve(import.meta.dirname, '../../tools/cli/hookledger.js');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** `hookledger <args>` as a person runs it; resolves with its exit code and output whatever the code. */
function hookledger(args: string[], env: NodeJS.ProcessEnv): Promise<Run> {
  return new Promise((done) => {
    execFile(process.execPath, [bin, ...args], { env, timeout: 300_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      done({ code, stdout, stderr });
    });
  });
}

/** The `subject  schema  id` rows `topics` prints, as subject → id. */
function schemaIds(stdout: string): Map<string, string> {
  const rows = stdout.split('\n').filter((line) => /-value\s+\S+\.avsc\s+\d+$/.test(line));
  return new Map(rows.map((line) => line.split(/\s+/)).map((cells) => [cells[0]!, cells[2]!]));
}

const ROUNDS = 3;

// Always local JVMs: their data stays in the state dir between runs, which is what starting again
// means (a Docker stack's data leaves with its containers).
describe('the local stack started again over the same state', () => {
  let stateDir: string | undefined;
  let env: NodeJS.ProcessEnv = {};

  afterAll(async () => {
    if (!stateDir) return;
    await hookledger(['stack', 'down'], env);
    await rm(stateDir, { recursive: true, force: true });
  });

  it(
    `serves its stored schemas at once, ${ROUNDS} times in a row, with and without TOPIC_PREFIX`,
    async () => {
      stateDir = await mkdtemp(join(tmpdir(), 'hookledger-restart-'));
      // No variables: each command must find the stack by itself, in HOOKLEDGER_STATE_DIR.
      const { KAFKA_BROKERS, SCHEMA_REGISTRY_URL, HOOKLEDGER_LOCAL_STACK, ...inherited } = process.env;
      // Partitions as `start` makes them on a local stack: this test is about the registry, not the broker.
      env = {
        ...inherited,
        HOOKLEDGER_STATE_DIR: stateDir,
        HOOKLEDGER_STACK: 'local',
        TOPIC_PARTITIONS: '4',
        LOG_LEVEL: 'warn',
      };
      // With and without TOPIC_PREFIX through `topics`; more prefixes with their schemas only, as runs
      // with a TOPIC_PREFIX leave them: a longer journal for the registry to read back on each start.
      const prefixes = ['', `r-${randomUUID().slice(0, 6)}.`];
      const journal = Array.from({ length: 6 }, () => `j-${randomUUID().slice(0, 6)}.`);
      const firstIds = new Map<string, string>();
      /** Ids live as long as the stack's data: the same schema keeps its id across restarts. */
      const expectFirstIds = (round: number, ids: Map<string, string>) => {
        expect(ids.size).toBeGreaterThan(0);
        for (const [subject, id] of ids) {
          if (round === 1) firstIds.set(subject, id);
          else expect(id, `round ${round}: ${subject}`).toBe(firstIds.get(subject));
        }
      };

      for (let round = 1; round <= ROUNDS; round++) {
        const up = await hookledger(['stack', 'up'], env);
        expect(up.code, `round ${round}: stack up: ${up.stderr}`).toBe(0);
        const { registryUrl } = readStackRecord(stateDir)!;

        // The moment `up` returns, as `start` goes on to do: registering subjects the registry holds
        // (the ones stored last first) is a no-op that answers their ids.
        const serde = createSerde({ registryUrl });
        for (const prefix of round === 1 ? journal : [...journal].reverse()) {
          const registered = await serde.registerAll(prefix);
          expectFirstIds(round, new Map(registered.map((r) => [r.subject, String(r.id)])));
        }

        for (const prefix of prefixes) {
          const topics = await hookledger(['topics'], { ...env, TOPIC_PREFIX: prefix });
          expect(topics.code, `round ${round}, prefix "${prefix}": ${topics.stderr}`).toBe(0);
          expect(topics.stderr).toContain(`hookledger: using the local stack in ${stateDir} (Kafka `);
          expectFirstIds(round, schemaIds(topics.stdout));
          if (round > 1) expect(topics.stdout).toContain('nothing changed');
        }

        const down = await hookledger(['stack', 'down'], env);
        expect(down.code, `round ${round}: stack down: ${down.stderr}`).toBe(0);
      }

      // Nothing runs any more: a command says how to get a stack, in one line.
      const none = await hookledger(['topics'], env);
      expect(none.code).toBe(1);
      expect(none.stderr.trim()).toBe(
        `hookledger: KAFKA_BROKERS and SCHEMA_REGISTRY_URL are not set, and no local stack runs in ${stateDir}: start one with \`npx hookledger start\` or \`npx hookledger stack up\`, or set both variables`,
      );
    },
    30 * 60_000,
  );
});
