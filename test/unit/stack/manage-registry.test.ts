// `stack kill|restart|freeze|thaw registry` refuse what they cannot do, in one line saying what to do.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { actOnRegistryIn } from '../../../tools/stack/manage.js';
import { type StackRecord, writeStackRecord } from '../../../tools/stack/state.js';

const logger = pino({ level: 'silent' });

const local: StackRecord = {
  kind: 'local',
  detached: true,
  brokers: ['127.0.0.1:1'],
  registryUrl: 'http://127.0.0.1:2/apis/ccompat/v7',
  startedAt: '2026-11-26T00:00:00.000Z',
  ownerPid: 1,
  logFiles: {},
};

describe('acting on the registry of a stack', () => {
  let stateDir: string;
  beforeEach(async () => {
    stateDir = await mkdtemp(join(tmpdir(), 'hookledger-manage-'));
  });
  afterEach(async () => {
    await rm(stateDir, { recursive: true, force: true });
  });

  it('needs a stack', async () => {
    await expect(actOnRegistryIn(stateDir, 'kill', { logger })).rejects.toThrow(
      `no stack runs from ${stateDir}: start one with \`hookledger stack up\``,
    );
  });

  it('says how to start a registry that does not run, instead of freezing, thawing or killing nothing', async () => {
    await writeStackRecord(stateDir, local);
    for (const action of ['kill', 'freeze', 'thaw'] as const) {
      await expect(actOnRegistryIn(stateDir, action, { logger })).rejects.toThrow(
        `the schema registry of ${stateDir} is not running: \`hookledger stack restart registry\` starts it`,
      );
    }
  });

  it('leaves a stack another live process owns to that process', async () => {
    await writeStackRecord(stateDir, { ...local, detached: false, ownerPid: process.ppid });
    await expect(actOnRegistryIn(stateDir, 'freeze', { logger })).rejects.toThrow(
      `this stack was started by process ${process.ppid}, which stops it when it ends; freeze its registry there (or stop that process)`,
    );
  });

  it('refuses a Docker stack, naming its container', async () => {
    await writeStackRecord(stateDir, {
      ...local,
      kind: 'docker',
      docker: { kafkaContainer: 'k'.repeat(64), registryContainer: 'abcdef0123456789', network: 'n' },
    });
    await expect(actOnRegistryIn(stateDir, 'restart', { logger })).rejects.toThrow(
      "a Docker stack's registry runs in container abcdef012345",
    );
  });

  it('restarts the secured stack whole, not its registry alone', async () => {
    await writeStackRecord(stateDir, { ...local, probeBrokers: ['127.0.0.1:3'] });
    for (const action of ['kill', 'restart'] as const) {
      await expect(actOnRegistryIn(stateDir, action, { logger })).rejects.toThrow(
        'the secured stack is restarted whole: `hookledger stack down`, then `hookledger stack up --secure`',
      );
    }
  });
});
