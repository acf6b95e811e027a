import { describe, expect, it, vi } from 'vitest';
import {
  chooseDedicatedKind,
  chooseStack,
  configuredStack,
  type StackProbes,
} from '../../../tools/stack/choose.js';

const probes = (
  docker: boolean,
  localProblem?: string,
): StackProbes & { dockerAnswers: ReturnType<typeof vi.fn> } => ({
  dockerAnswers: vi.fn(async () => docker),
  localProblem: vi.fn(async () => localProblem),
});

describe('choosing where Kafka and the registry come from', () => {
  it('uses KAFKA_BROKERS and SCHEMA_REGISTRY_URL when both are set, without probing anything', async () => {
    const machine = probes(true);
    const env = { KAFKA_BROKERS: 'a:9092, b:9092', SCHEMA_REGISTRY_URL: 'http://r:8081/apis/ccompat/v7/' };
    expect(await chooseStack(env, machine)).toEqual({
      kind: 'configured',
      brokers: ['a:9092', 'b:9092'],
      registryUrl: 'http://r:8081/apis/ccompat/v7',
    });
    expect(machine.dockerAnswers).not.toHaveBeenCalled();
  });

  it('refuses half a configuration, naming the missing variable', () => {
    expect(() => configuredStack({ KAFKA_BROKERS: 'a:9092' })).toThrow(/SCHEMA_REGISTRY_URL is not/);
    expect(() => configuredStack({ SCHEMA_REGISTRY_URL: 'http://r' })).toThrow(/KAFKA_BROKERS is not/);
  });

  it('prefers Docker when an engine answers', async () => {
    expect(await chooseStack({}, probes(true))).toEqual({ kind: 'docker' });
  });

  it('runs local JVMs when Docker does not answer and Java is there', async () => {
    expect(await chooseStack({}, probes(false))).toEqual({ kind: 'local' });
  });

  it('skips Docker entirely when HOOKLEDGER_STACK=local', async () => {
    const machine = probes(true);
    expect(await chooseStack({ HOOKLEDGER_STACK: 'local' }, machine)).toEqual({ kind: 'local' });
    expect(machine.dockerAnswers).not.toHaveBeenCalled();
  });

  it('fails clearly when Docker is demanded and absent', async () => {
    await expect(chooseStack({ HOOKLEDGER_STACK: 'docker' }, probes(false))).rejects.toThrow(
      /no Docker engine answers/,
    );
  });

  it('names the three ways to get a stack when none is available', async () => {
    const error = chooseStack({}, probes(false, 'no Java found'));
    await expect(error).rejects.toThrow(/no Java found/);
    await expect(error).rejects.toThrow(/KAFKA_BROKERS and SCHEMA_REGISTRY_URL.*Docker.*Java 17\+ and Maven/);
  });

  it('rejects an unknown HOOKLEDGER_STACK value', async () => {
    await expect(chooseStack({ HOOKLEDGER_STACK: 'podman' }, probes(true))).rejects.toThrow(
      /HOOKLEDGER_STACK/,
    );
  });

  it('starts a dedicated broker locally or in Docker even when the shared stack is configured', async () => {
    const env = { KAFKA_BROKERS: 'a:9092', SCHEMA_REGISTRY_URL: 'http://r' };
    expect(await chooseDedicatedKind(env, probes(false))).toBe('local');
    expect(await chooseDedicatedKind(env, probes(true))).toBe('docker');
  });
});
