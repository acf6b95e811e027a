import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { defaultStateDir, renderStackEnv, stackFiles, writeStackRecord } from '../../../tools/stack/state.js';

describe('the stack state directory', () => {
  it('is .hookledger/stack in the working directory unless HOOKLEDGER_STATE_DIR says otherwise', () => {
    expect(defaultStateDir({}, '/repo')).toBe(join('/repo', '.hookledger', 'stack'));
    expect(defaultStateDir({ HOOKLEDGER_STATE_DIR: 'elsewhere' }, '/repo')).toBe(join('/repo', 'elsewhere'));
    expect(defaultStateDir({ HOOKLEDGER_STATE_DIR: '/abs' }, '/repo')).toBe('/abs');
  });

  it('gets a stack.env that a shell can source', () => {
    expect(
      renderStackEnv({
        brokers: ['127.0.0.1:1', '127.0.0.1:2'],
        registryUrl: 'http://127.0.0.1:3/apis/ccompat/v7',
      }),
    ).toBe(
      'KAFKA_BROKERS=127.0.0.1:1,127.0.0.1:2\nSCHEMA_REGISTRY_URL=http://127.0.0.1:3/apis/ccompat/v7\nHOOKLEDGER_LOCAL_STACK=true\n',
    );
  });

  it('leaves HOOKLEDGER_LOCAL_STACK out for a cluster of three, which passes the production checks', () => {
    expect(
      renderStackEnv({
        brokers: ['127.0.0.1:1', '127.0.0.1:2', '127.0.0.1:4'],
        registryUrl: 'http://127.0.0.1:3/apis/ccompat/v7',
      }),
    ).not.toContain('HOOKLEDGER_LOCAL_STACK');
  });

  it('writes its files, which hold the secured stack’s passwords, readable by their owner only', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookledger-state-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const files = stackFiles(dir);
    // An earlier stack's record, readable by anyone.
    writeFileSync(files.record, '{}');
    chmodSync(files.record, 0o644);
    await writeStackRecord(dir, {
      kind: 'local',
      detached: true,
      brokers: ['127.0.0.1:1'],
      registryUrl: 'http://127.0.0.1:3',
      startedAt: new Date(0).toISOString(),
      ownerPid: 1,
      logFiles: {},
      clientEnv: { KAFKA_SASL_PASSWORD: 'secret' },
      oauthClientEnv: { KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET: 'secret' },
    });
    for (const file of [files.record, files.env, files.oauthEnv])
      expect(statSync(file).mode & 0o777, file).toBe(0o600);
  });
});
