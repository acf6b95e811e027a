import { describe, expect, it } from 'vitest';
import { CommandFailed } from '../../../tools/cli/command.js';
import { resolveStackEnv } from '../../../tools/cli/stack-env.js';
import type { StackRecord } from '../../../tools/stack/index.js';

const cwd = '/home/dev/hookledger';

const record: StackRecord = {
  kind: 'local',
  detached: true,
  brokers: ['127.0.0.1:42175'],
  registryUrl: 'http://127.0.0.1:33441/apis/ccompat/v7',
  kafkaVersion: '3.9.1',
  startedAt: '2026-11-23T13:00:00.000Z',
  ownerPid: 4242,
  logFiles: {},
};

/** A fake lookup: the stack runs from `runningIn` only, and every state dir asked about is recorded. */
function stackIn(runningIn: string | undefined) {
  const asked: string[] = [];
  const findStack = (stateDir: string) => {
    asked.push(stateDir);
    return stateDir === runningIn ? record : undefined;
  };
  return { asked, findStack };
}

describe('a command without KAFKA_BROKERS and SCHEMA_REGISTRY_URL', () => {
  it('uses the stack running from .hookledger/stack, with the variables of its stack.env, and says which', () => {
    const { asked, findStack } = stackIn(`${cwd}/.hookledger/stack`);
    const resolved = resolveStackEnv({ TOPIC_PREFIX: 'dev.' }, { cwd, findStack });
    expect(asked).toEqual([`${cwd}/.hookledger/stack`]);
    expect(resolved.env).toEqual({
      TOPIC_PREFIX: 'dev.',
      KAFKA_BROKERS: '127.0.0.1:42175',
      SCHEMA_REGISTRY_URL: 'http://127.0.0.1:33441/apis/ccompat/v7',
      HOOKLEDGER_LOCAL_STACK: 'true',
    });
    expect(resolved.using).toBe(
      'using the local stack in .hookledger/stack (Kafka 127.0.0.1:42175, registry http://127.0.0.1:33441/apis/ccompat/v7)',
    );
  });

  it('reads the development sources `start` made beside the stack when no sources are set, and says so', () => {
    const { findStack } = stackIn(`${cwd}/.hookledger/stack`);
    const made = `${cwd}/.hookledger/sources.json`;
    const exists = (file: string) => file === made;
    const resolved = resolveStackEnv({}, { cwd, findStack, exists });
    expect(resolved.env.HOOKLEDGER_SOURCES_FILE).toBe(made);
    expect(resolved.using).toMatch(/ and its development sources in \.hookledger\/sources\.json$/);
    // Sources set by the user are theirs: the file is not looked at.
    for (const set of [{ HOOKLEDGER_SOURCES: '{}' }, { HOOKLEDGER_SOURCES_FILE: '/etc/s.json' }]) {
      const chosen = resolveStackEnv(set, { cwd, findStack, exists });
      expect(chosen.env.HOOKLEDGER_SOURCES_FILE).toBe(set.HOOKLEDGER_SOURCES_FILE);
      expect(chosen.using).not.toMatch(/development sources/);
    }
    // No file: nothing added.
    expect(resolveStackEnv({}, { cwd, findStack, exists: () => false }).env).not.toHaveProperty(
      'HOOKLEDGER_SOURCES_FILE',
    );
  });

  it('looks in HOOKLEDGER_STATE_DIR when it is set, and names it as given outside the working directory', () => {
    const { asked, findStack } = stackIn('/srv/stack');
    const resolved = resolveStackEnv({ HOOKLEDGER_STATE_DIR: '/srv/stack' }, { cwd, findStack });
    expect(asked).toEqual(['/srv/stack']);
    expect(resolved.env.KAFKA_BROKERS).toBe('127.0.0.1:42175');
    expect(resolved.using).toMatch(/^using the local stack in \/srv\/stack \(Kafka 127\.0\.0\.1:42175,/);
  });

  it('takes a secured stack’s client variables too, as `export $(cat stack.env)` did', () => {
    const secured: StackRecord = {
      ...record,
      clientEnv: { KAFKA_SASL_MECHANISM: 'SCRAM-SHA-512', KAFKA_SASL_USERNAME: 'hookledger' },
    };
    const resolved = resolveStackEnv({}, { cwd, findStack: () => secured });
    expect(resolved.env).toMatchObject({
      KAFKA_SASL_MECHANISM: 'SCRAM-SHA-512',
      KAFKA_SASL_USERNAME: 'hookledger',
    });
  });

  it('fails with one line saying how to get a stack when none runs', () => {
    const { findStack } = stackIn(undefined);
    const attempt = () => resolveStackEnv({}, { cwd, findStack });
    expect(attempt).toThrow(CommandFailed);
    expect(attempt).toThrow(
      'KAFKA_BROKERS and SCHEMA_REGISTRY_URL are not set, and no local stack runs in .hookledger/stack: start one with `npx hookledger start` or `npx hookledger stack up`, or set both variables',
    );
  });

  it('treats empty variables as not set', () => {
    const { findStack } = stackIn(`${cwd}/.hookledger/stack`);
    const resolved = resolveStackEnv({ KAFKA_BROKERS: '', SCHEMA_REGISTRY_URL: ' ' }, { cwd, findStack });
    expect(resolved.env.KAFKA_BROKERS).toBe('127.0.0.1:42175');
  });
});

describe('a command with the variables set', () => {
  it('keeps them and looks for no stack', () => {
    const { asked, findStack } = stackIn(`${cwd}/.hookledger/stack`);
    const env = { KAFKA_BROKERS: 'kafka:9092', SCHEMA_REGISTRY_URL: 'http://registry:8081' };
    const resolved = resolveStackEnv(env, { cwd, findStack });
    expect(resolved).toEqual({ env });
    expect(asked).toEqual([]);
  });

  it('keeps half a configuration as it is, for the config check to name the missing variable', () => {
    const { asked, findStack } = stackIn(`${cwd}/.hookledger/stack`);
    const env = { KAFKA_BROKERS: 'kafka:9092' };
    expect(resolveStackEnv(env, { cwd, findStack })).toEqual({ env });
    expect(asked).toEqual([]);
  });
});
