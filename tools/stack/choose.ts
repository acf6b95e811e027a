// Which stack to use, in the design's order: configured variables, Docker, local JVMs, else one clear error.
import { StackError } from './errors.js';

export type StackKind = 'configured' | 'docker' | 'local';

/** `HOOKLEDGER_STACK`: `auto` (the default order), or force `docker` or `local`. */
export type StackPreference = 'auto' | 'docker' | 'local';

export type StackChoice =
  | { kind: 'configured'; brokers: string[]; registryUrl: string }
  | { kind: 'docker' }
  | { kind: 'local' };

/** What choosing needs to know about the machine; probed lazily, only as far as the order requires. */
export interface StackProbes {
  /** A Docker engine answers a ping (fast: a socket and a short timeout). */
  dockerAnswers(): Promise<boolean>;
  /** Why local JVMs cannot run here ("no Java found", …), or undefined when they can. */
  localProblem(): Promise<string | undefined>;
}

export const NO_STACK_HELP =
  'set KAFKA_BROKERS and SCHEMA_REGISTRY_URL to use a running Kafka and schema registry; or start a Docker engine (testcontainers runs them); or install Java 17+ and Maven to run them as local processes';

export function stackPreference(env: NodeJS.ProcessEnv): StackPreference {
  const value = (env.HOOKLEDGER_STACK ?? '').trim().toLowerCase();
  if (value === '' || value === 'auto') return 'auto';
  if (value === 'docker' || value === 'local') return value;
  throw new StackError(
    `HOOKLEDGER_STACK: expected auto, docker or local (got ${JSON.stringify(env.HOOKLEDGER_STACK)})`,
  );
}

/** The stack the environment names, if it names one. Half a configuration is a mistake, not a hint. */
export function configuredStack(
  env: NodeJS.ProcessEnv,
): { brokers: string[]; registryUrl: string } | undefined {
  const brokers = (env.KAFKA_BROKERS ?? '').trim();
  const registryUrl = (env.SCHEMA_REGISTRY_URL ?? '').trim();
  if (!brokers && !registryUrl) return undefined;
  if (!brokers || !registryUrl) {
    const [set, unset] = brokers
      ? ['KAFKA_BROKERS', 'SCHEMA_REGISTRY_URL']
      : ['SCHEMA_REGISTRY_URL', 'KAFKA_BROKERS'];
    throw new StackError(
      `${set} is set but ${unset} is not: set both to use a running stack, or neither to start one`,
    );
  }
  return {
    brokers: brokers
      .split(',')
      .map((b) => b.trim())
      .filter(Boolean),
    registryUrl: registryUrl.replace(/\/+$/, ''),
  };
}

export async function chooseStack(env: NodeJS.ProcessEnv, probes: StackProbes): Promise<StackChoice> {
  const configured = configuredStack(env);
  if (configured) return { kind: 'configured', ...configured };
  const preference = stackPreference(env);

  if (preference !== 'local') {
    if (await probes.dockerAnswers()) return { kind: 'docker' };
    if (preference === 'docker') {
      throw new StackError(
        'HOOKLEDGER_STACK=docker, but no Docker engine answers (check DOCKER_HOST or the docker socket)',
      );
    }
  }
  const problem = await probes.localProblem();
  if (problem === undefined) return { kind: 'local' };
  if (preference === 'local') throw new StackError(`HOOKLEDGER_STACK=local, but ${problem}`);
  throw new StackError(`no Kafka and schema registry available (${problem}): ${NO_STACK_HELP}`);
}

/** Choosing for a dedicated extra broker: the same order, except that a configured stack cannot provide one. */
export async function chooseDedicatedKind(
  env: NodeJS.ProcessEnv,
  probes: StackProbes,
): Promise<'docker' | 'local'> {
  const choice = await chooseStack({ ...env, KAFKA_BROKERS: '', SCHEMA_REGISTRY_URL: '' }, probes);
  return choice.kind === 'docker' ? 'docker' : 'local';
}
