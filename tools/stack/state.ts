// What a running stack leaves in its state directory: stack.json (for status/down/restart) and stack.env.
import { readFileSync } from 'node:fs';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';

export interface StackRecord {
  kind: 'local' | 'docker';
  detached: boolean;
  brokers: string[];
  registryUrl: string;
  /** The broker's version (HOOKLEDGER_KAFKA_VERSION when it started); absent in records from before it could vary. */
  kafkaVersion?: string;
  startedAt: string;
  /** The process that started it; for a supervised stack, the JVMs die with it. */
  ownerPid: number;
  logFiles: { kafka?: string; registry?: string };
  /** Kafka nodes of a local stack (`stack up --brokers 3`); absent means one. */
  brokerCount?: number;
  docker?: { kafkaContainer: string; registryContainer: string; network: string };
  /** A secured stack: the variables clients log in with (KAFKA_SASL_*, KAFKA_SSL_CA_FILE, SCHEMA_REGISTRY_*). */
  clientEnv?: Record<string, string>;
  /** A secured stack: the same variables logging in with OAUTHBEARER through its token endpoint (stack-oauth.env). */
  oauthClientEnv?: Record<string, string>;
  /** A secured stack: its PLAINTEXT listener, where `stack status` checks that Kafka answers. */
  probeBrokers?: string[];
}

/** `$HOOKLEDGER_STATE_DIR`, else `.hookledger/stack` in the working directory (gitignored). */
export function defaultStateDir(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): string {
  return resolve(cwd, env.HOOKLEDGER_STATE_DIR || join('.hookledger', 'stack'));
}

export function stackFiles(stateDir: string) {
  return {
    record: join(stateDir, 'stack.json'),
    env: join(stateDir, 'stack.env'),
    /** A secured stack's variables for OAUTHBEARER instead of SCRAM. */
    oauthEnv: join(stateDir, 'stack-oauth.env'),
  };
}

/**
 * The variables that point hookledger at the stack, as `NAME=value` lines (`set -a; . stack.env`).
 * HOOKLEDGER_LOCAL_STACK tells `topics` that replication factor 1 is expected here.
 */
export function renderStackEnv(stack: {
  brokers: string[];
  registryUrl: string;
  clientEnv?: Record<string, string>;
}): string {
  return [
    `KAFKA_BROKERS=${stack.brokers.join(',')}`,
    `SCHEMA_REGISTRY_URL=${stack.registryUrl}`,
    ...Object.entries(stack.clientEnv ?? {}).map(([name, value]) => `${name}=${value}`),
    // One broker cannot hold three replicas; a local cluster of three passes the production checks.
    ...(stack.brokers.length < 3 ? ['HOOKLEDGER_LOCAL_STACK=true'] : []),
    '',
  ].join('\n');
}

export async function writeStackRecord(stateDir: string, record: StackRecord): Promise<void> {
  const files = stackFiles(stateDir);
  await mkdir(stateDir, { recursive: true });
  // The secured stack's files hold its passwords (the record its client variables too): readable by their
  // owner only, also when an earlier stack left them readable by others.
  const ownerOnly = async (file: string, text: string) => {
    await writeFile(file, text, { mode: 0o600 });
    await chmod(file, 0o600);
  };
  await ownerOnly(files.record, `${JSON.stringify(record, null, 2)}\n`);
  await ownerOnly(files.env, renderStackEnv(record));
  if (record.oauthClientEnv)
    await ownerOnly(files.oauthEnv, renderStackEnv({ ...record, clientEnv: record.oauthClientEnv }));
}

export function readStackRecord(stateDir: string): StackRecord | undefined {
  try {
    return JSON.parse(readFileSync(stackFiles(stateDir).record, 'utf8')) as StackRecord;
  } catch {
    return undefined;
  }
}
