// `hookledger start` stopped with Ctrl-C and run again over the same `.hookledger`, as a person does
// between two sessions: each time it becomes ready, with the same key, and leaves nothing running.
// (stack-restart.test.ts does the same for `stack up`; this one runs the whole of start.)
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readStackRecord } from '../../tools/stack/index.js';
import {
  cleanUp,
  freePort,
  listening,
  openTerminal,
  processesIn,
  sleep,
  stoppedByCtrlC,
  type Terminal,
  type UserDir,
  userDir,
} from '../helpers/user-shell.js';

const ROUNDS = 3;
const START_MS = 240_000;
/** From start's banner to both /readyz answering 200. */
const READY_MS = 120_000;

describe('start run again over the same state', () => {
  let user: UserDir | undefined;
  let terminal: Terminal | undefined;

  afterAll(async () => {
    // Whatever happened, nothing stays: a JVM or a start left behind is stopped, then fails the test.
    if (user) expect(await cleanUp(user, terminal)).toEqual([]);
  }, 180_000);

  it(
    `becomes ready ${ROUNDS} times in a row with Ctrl-C between, with the same key, leaving nothing running`,
    async () => {
      user = await userDir('hookledger-start-again-');
      const ports = {
        INGEST_PORT: String(await freePort()),
        INGEST_OPS_PORT: String(await freePort()),
        PROCESSOR_PORT: String(await freePort()),
      };
      let firstKey: string | undefined;
      for (let round = 1; round <= ROUNDS; round++) {
        terminal = openTerminal('npx hookledger start', user, ports);
        await terminal.waitFor(/https?:\/\/\S+\/webhooks\/local\b/, START_MS);
        await terminal.waitFor(/Ctrl-C/, 10_000);
        // Running, then ready once the processors have restored their state (a few seconds).
        for (const port of [ports.INGEST_OPS_PORT, ports.PROCESSOR_PORT]) {
          const readyz = async () => {
            const answer = await fetch(`http://127.0.0.1:${port}/readyz`);
            return { status: answer.status, body: await answer.text() };
          };
          let ready = await readyz();
          for (const deadline = Date.now() + READY_MS; ready.status !== 200 && Date.now() < deadline; ) {
            await sleep(1_000);
            ready = await readyz();
          }
          expect(ready.status, `round ${round}: :${port}/readyz ${ready.body}`).toBe(200);
        }
        const sources = JSON.parse(readFileSync(resolve(user.dir, '.hookledger/sources.json'), 'utf8'));
        const key = sources.local.keys.dev as string;
        expect(terminal.output(), `round ${round}: the key is printed`).toContain(key);
        if (round === 1) firstKey = key;
        else expect(key, `round ${round}: the key made on the first start`).toBe(firstKey);

        const stack = readStackRecord(resolve(user.dir, '.hookledger/stack'));
        expect(stoppedByCtrlC(await terminal.interrupt()), `round ${round}:\n${terminal.output()}`).toBe(
          true,
        );
        expect(terminal.output()).toMatch(/\bstopped\b/);
        expect(await processesIn(user.dir), `round ${round}: left running`).toEqual([]);
        for (const broker of stack?.brokers ?? []) {
          const [host, port] = broker.split(':');
          expect(await listening(host!, Number(port)), `round ${round}: ${broker}`).toBe(false);
        }
        terminal = undefined;
      }
    },
    ROUNDS * 5 * 60_000,
  );
});
