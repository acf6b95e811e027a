// The --json output of the commands scripts read: one JSON value on stdout, its shape fixed.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { redriveJson } from '../../../tools/cli/commands/redrive.js';
import { statusJson } from '../../../tools/cli/commands/stack.js';
import { listingJson } from '../../../tools/quarantine/list.js';
import { runCliInProcess } from '../../helpers/cli-in-process.js';

const bin = resolve(import.meta.dirname, '../../../tools/cli/hookledger.js');
const dir = mkdtempSync(join(tmpdir(), 'hookledger-json-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('--json', () => {
  it('redrive: the counts, the selected reasons as an object', () => {
    const json = redriveJson({
      runId: 'redrive-20261126-090000-ab12',
      dryRun: true,
      read: 5,
      selected: new Map([['webhook-date-invalid', 3]]),
      sent: 3,
      skippedByFilter: 1,
      skippedUndecodable: 1,
      skippedFetchAnswers: 0,
      skippedExpired: 2,
      repeats: 0,
      dedupeWindowMs: 604_800_000,
      includeExpired: false,
      interrupted: false,
    });
    expect(JSON.parse(json)).toEqual({
      runId: 'redrive-20261126-090000-ab12',
      dryRun: true,
      read: 5,
      selected: { 'webhook-date-invalid': 3 },
      sent: 3,
      skippedByFilter: 1,
      skippedUndecodable: 1,
      skippedFetchAnswers: 0,
      skippedExpired: 2,
      repeats: 0,
      dedupeWindowMs: 604_800_000,
      includeExpired: false,
      interrupted: false,
    });
  });

  it('quarantine list: one object per request, ISO times, promotedBy null while held', () => {
    const json = listingJson([
      {
        receivedAt: Date.UTC(2026, 10, 26, 9),
        source: 'energy',
        webhookId: 'wh-1',
        reason: 'mismatch',
        triedKeyIds: ['k1'],
        ingestId: 'i-1',
        promotedBy: undefined,
      },
    ]);
    expect(JSON.parse(json)).toEqual([
      {
        receivedAt: '2026-11-26T09:00:00.000Z',
        source: 'energy',
        webhookId: 'wh-1',
        reason: 'mismatch',
        triedKeyIds: ['k1'],
        ingestId: 'i-1',
        promotedBy: null,
      },
    ]);
  });

  it('stack status: what runs where, never a secured stack’s credentials', () => {
    const status = statusJson('/s', {
      record: {
        kind: 'local',
        detached: true,
        brokers: ['127.0.0.1:9092'],
        registryUrl: 'http://127.0.0.1:8081/apis/ccompat/v7',
        startedAt: '2026-11-26T09:00:00.000Z',
        ownerPid: 1,
        logFiles: {},
        clientEnv: { KAFKA_SASL_PASSWORD: 'stack-secret' },
      },
      components: [{ name: 'kafka', address: '127.0.0.1:9092', pid: 7, answers: true }],
      healthy: true,
    });
    expect(status).toMatchObject({ running: true, kind: 'local', secured: true, healthy: true });
    expect(JSON.stringify(status)).not.toContain('stack-secret');
  });

  it('stack status with no stack, as a user runs it: {running: false}, exit 1', () => {
    const stateDir = join(dir, 'none');
    const result = spawnSync(process.execPath, [bin, '--json', 'stack', 'status', '--state-dir', stateDir], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(result.status).toBe(1);
    expect(JSON.parse(result.stdout)).toEqual({ running: false, stateDir });
  }, 60_000);

  it('a command without JSON output refuses --json as a usage mistake', async () => {
    const result = await runCliInProcess(['--json', 'process']);
    expect(result.status).toBe(2);
    expect(result.stderr.trim()).toMatch(/^hookledger: Unknown option '--json'/);
  });
});
