// hookledger replay against the real broker: the whole raw topic rebuilt side by side equals the live outputs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningStage } from '../../runtime/streams/stage.js';
import { ENTITY_STREAMS, TABLE_STREAMS } from '../../schemas/topics.js';
import { runReplayCommand } from '../../tools/cli/commands/replay.js';
import { replayTopic } from '../../tools/replay/topics.js';
import { lastRows, multisets } from '../helpers/compare-streams.js';
import { testStack } from '../helpers/stack.js';
import { storedDeliveries } from '../unit/processors/fixtures.js';
import { ProcessorsHarness, randomPrefix } from './processors-harness.js';

describe('hookledger replay of the whole raw topic', () => {
  const harness = new ProcessorsHarness(testStack(), randomPrefix('replay'));
  const id = 'it1';
  const stages: RunningStage[] = [];
  const printed: string[] = [];
  let exitCode: number | undefined;
  const routerOutputs = () => [
    harness.names.unique,
    harness.names.failures,
    harness.names.dlq,
    ...ENTITY_STREAMS.map((s) => harness.names.entity(s)),
  ];

  beforeAll(async () => {
    await harness.setUp();
    const deliveries = storedDeliveries().map((d) => d.envelope);
    // Each delivery twice (a platform retry): the replay must drop the same duplicates live did.
    await harness.produceRaw([...deliveries, ...deliveries]);
    stages.push(...(await harness.startRouterAndTables()));
    exitCode = await runReplayCommand(['--id', id], {
      stdout: { write: (text: string) => printed.push(text) },
      stderr: { write: () => true },
      env: harness.environment(),
    });
  });

  afterAll(async () => {
    for (const stage of stages) await stage.close();
  });

  it('exits 0 and prints the summary and the cut-over', () => {
    expect(exitCode).toBe(0);
    const text = printed.join('');
    expect(text).toContain(`replay ${id} complete`);
    expect(text).toMatch(/duplicates \d+/);
    expect(text).toContain(replayTopic(harness.names.entity('user'), id));
    expect(text).toContain('To cut a consumer over');
  });

  it('writes, per key, the same multiset of records as the live router, in every output', async () => {
    for (const live of routerOutputs()) {
      const expected = multisets(await harness.read(live));
      if (live === harness.names.unique || live === harness.names.entity('energy-switch'))
        expect(expected.size, live).toBeGreaterThan(0);
      const actual = multisets(await harness.read(replayTopic(live, id)));
      expect(actual, live).toEqual(expected);
    }
  });

  it('builds tables equal to the live tables', async () => {
    for (const stream of TABLE_STREAMS) {
      const live = harness.names.latest(stream);
      const expected = lastRows(await harness.read(live));
      expect(expected.size, live).toBeGreaterThan(0);
      expect(lastRows(await harness.read(replayTopic(live, id))), live).toEqual(expected);
    }
  });

  it('resumes to nothing when run again with the same id: no record is written twice', async () => {
    const before = await harness.read(replayTopic(harness.names.entity('user'), id));
    const again: string[] = [];
    const code = await runReplayCommand(['--id', id], {
      stdout: { write: (text: string) => again.push(text) },
      stderr: { write: () => true },
      env: harness.environment(),
    });
    expect(code).toBe(0);
    expect(again.join('')).toContain('read 0 record(s)');
    expect(await harness.read(replayTopic(harness.names.entity('user'), id))).toHaveLength(before.length);
  });

  it('refuses other bounds for an existing replay id, with one line', async () => {
    await expect(
      runReplayCommand(['--id', id, '--to-offset', '0:1'], {
        stdout: { write: () => true },
        stderr: { write: () => true },
        env: harness.environment(),
      }),
    ).rejects.toThrow(/bounds are kept from its first run/);
  });

  it('warns at start about a --trigger name no contract trigger has, and says when no record matched it', async () => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runReplayCommand(
      ['--id', 'it3', '--stage', 'dedupe-router', '--trigger', 'userAdded'],
      {
        stdout: { write: (text: string) => out.push(text) },
        stderr: { write: (text: string) => err.push(text) },
        env: harness.environment(),
      },
    );
    expect(code).toBe(0);
    expect(err.join('')).toContain(
      "replay it3: warning: --trigger userAdded is not a trigger of the platform's contract (did you mean UserAdded?)",
    );
    const raw = (await harness.read(harness.names.raw, { decode: false })).length;
    expect(out.join('')).toContain(
      `no record matched --trigger userAdded: nothing replayed (${raw} other record(s) in range skipped)`,
    );
    expect(await harness.read(replayTopic(harness.names.entity('user'), 'it3'))).toEqual([]);
  });

  it('replays a contract trigger without a warning', async () => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runReplayCommand(
      ['--id', 'it4', '--stage', 'dedupe-router', '--trigger', 'UserAdded'],
      {
        stdout: { write: (text: string) => out.push(text) },
        stderr: { write: (text: string) => err.push(text) },
        env: harness.environment(),
      },
    );
    expect(code).toBe(0);
    expect(err.join('')).not.toContain('warning');
    expect(out.join('')).not.toContain('no record matched');
    expect((await harness.read(replayTopic(harness.names.entity('user'), 'it4'))).length).toBeGreaterThan(0);
  });

  it('registers no subject with SCHEMA_REGISTRY_AUTO_REGISTER=false: its records carry the live subjects’ schema ids', async () => {
    const lookupOnly = 'it2';
    const code = await runReplayCommand(['--id', lookupOnly, '--stage', 'dedupe-router'], {
      stdout: { write: () => true },
      stderr: { write: () => true },
      env: harness.environment({ SCHEMA_REGISTRY_AUTO_REGISTER: 'false' }),
    });
    expect(code).toBe(0);
    const subjects = (await (await fetch(`${testStack().registryUrl}/subjects`)).json()) as string[];
    expect(subjects.filter((s) => s.includes(`.replay-${lookupOnly}`))).toEqual([]);
    expect(subjects).toContain(`${replayTopic(harness.names.unique, id)}-value`);
    for (const live of [harness.names.unique, harness.names.entity('user')]) {
      const expected = multisets(await harness.read(live));
      expect(multisets(await harness.read(replayTopic(live, lookupOnly))), live).toEqual(expected);
    }
  });
});
