// `hookledger config check`: every variable validated without starting anything, each problem one line;
// with `connect`, the brokers (a metadata request, so TLS and SASL too) and the registry reached as well.

import { accessSync, constants } from 'node:fs';
import { loadSources, sourcesSettings } from '../../ingest/sources.js';
import { type Config, ConfigError, type ConfigProblem, checkConfig } from '../../runtime/config.js';
import { withAdmin } from '../../runtime/kafka/admin.js';
import { assertBrokersReachable } from '../../runtime/kafka/reachable.js';
import { checkedKafkaProperties, kafkaSettings } from '../../runtime/kafka/settings.js';
import {
  renamedVariableLines,
  unknownVariableLine,
  unknownVariables,
} from '../../runtime/known-variables.js';
import { createLogger } from '../../runtime/log.js';
import { riskySettings } from '../../runtime/risky-settings.js';
import { registryAccess } from '../../schemas/registry-access.js';
import { assertRegistryReachable } from '../../schemas/registry-reachable.js';
import { stackPreference } from '../stack/choose.js';
import { kafkaRelease } from '../stack/kafka-versions.js';

export interface ConfigReport {
  ok: boolean;
  /** Each makes a command refuse to start; one line each. */
  problems: ConfigProblem[];
  /** Worth reading, not refused: an unknown variable, ingest without sources. */
  warnings: string[];
  /** With connect: what was reached. */
  reached?: { kafka: boolean; registry: boolean };
}

function problemOf(error: unknown, fallback: string): ConfigProblem {
  const message = (error as Error).message;
  const colon = message.indexOf(': ');
  const head = colon > 0 ? message.slice(0, colon) : '';
  // Messages name their variable first (`KAFKA_SSL_CA_FILE: …`); a file's check says `--config f: …`.
  return /^[A-Z][A-Z0-9_]*$/.test(head)
    ? { variable: head, message: message.slice(colon + 2) }
    : { variable: fallback, message };
}

/** Checks that need the parsed configuration: how its parts fit together and the files they name. */
function combinations(config: Config, problems: ConfigProblem[]): void {
  try {
    registryAccess(config);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    problems.push(problemOf(error, 'SCHEMA_REGISTRY_URL'));
  }
  try {
    checkedKafkaProperties(config);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    problems.push(problemOf(error, 'KAFKA_CONFIG_FILE'));
  }
  const cert = config.INGEST_TLS_CERT_FILE;
  const key = config.INGEST_TLS_KEY_FILE;
  if ((cert === undefined) !== (key === undefined))
    problems.push({
      variable: cert === undefined ? 'INGEST_TLS_CERT_FILE' : 'INGEST_TLS_KEY_FILE',
      message: 'native HTTPS needs both INGEST_TLS_CERT_FILE and INGEST_TLS_KEY_FILE (it is not set)',
    });
  for (const [variable, file] of [
    ['INGEST_TLS_CERT_FILE', cert],
    ['INGEST_TLS_KEY_FILE', key],
  ] as const) {
    if (file === undefined) continue;
    try {
      accessSync(file, constants.R_OK);
    } catch (error) {
      problems.push({
        variable,
        message: `cannot read ${JSON.stringify(file)} (${(error as NodeJS.ErrnoException).code})`,
      });
    }
  }
}

/** Ingest's sources, when set; their keys are never shown. */
function sources(env: NodeJS.ProcessEnv, problems: ConfigProblem[], warnings: string[]): void {
  const { inline, file } = sourcesSettings(env);
  if (!inline && !file) {
    warnings.push(
      'HOOKLEDGER_SOURCES and HOOKLEDGER_SOURCES_FILE are not set: `ingest` and `start` need one',
    );
    return;
  }
  try {
    loadSources(env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    problems.push(problemOf(error, 'HOOKLEDGER_SOURCES'));
  }
}

/** The local stack's variables (read by `start` and `stack`). */
function stackVariables(env: NodeJS.ProcessEnv, problems: ConfigProblem[]): void {
  for (const check of [() => stackPreference(env), () => kafkaRelease(env)]) {
    try {
      check();
    } catch (error) {
      problems.push(problemOf(error, 'HOOKLEDGER_STACK'));
    }
  }
}

export interface CheckOptions {
  /** Also reach the brokers and the registry. */
  connect?: boolean;
  /** Names set by the configuration file, checked for misspellings like the environment's. */
  fileNames?: readonly string[];
}

/** Validates everything a command would read from `env`; reaches nothing unless `connect`. */
export async function checkConfiguration(
  env: NodeJS.ProcessEnv,
  { connect = false, fileNames = [] }: CheckOptions = {},
): Promise<ConfigReport> {
  const warnings: string[] = [];
  const checked = checkConfig(env);
  const problems = [...checked.problems];
  if (checked.config !== undefined) {
    combinations(checked.config, problems);
    warnings.push(...riskySettings(checked.config));
  }
  sources(env, problems, warnings);
  stackVariables(env, problems);
  const names = new Set([...Object.keys(env), ...fileNames]);
  for (const unknown of unknownVariables(names)) warnings.push(unknownVariableLine(unknown));
  warnings.push(...renamedVariableLines(env));

  const report: ConfigReport = { ok: problems.length === 0, problems, warnings };
  if (!connect || checked.config === undefined || problems.length > 0) return report;
  const config = checked.config;
  const reached = { kafka: false, registry: false };
  try {
    await assertBrokersReachable(config.KAFKA_BROKERS);
    // A metadata request: the TLS handshake and the SASL login, not only a TCP connection.
    const logger = createLogger({ level: 'fatal', name: 'config-check' });
    await withAdmin(kafkaSettings(config, 'hookledger-config-check', logger), (admin) => admin.brokers());
    reached.kafka = true;
  } catch (error) {
    problems.push({
      variable: 'KAFKA_BROKERS',
      message: (error as Error).message.replace(/\s*\(KAFKA_BROKERS\)$/, ''),
    });
  }
  try {
    await assertRegistryReachable(registryAccess(config));
    reached.registry = true;
  } catch (error) {
    problems.push({
      variable: 'SCHEMA_REGISTRY_URL',
      message: (error as Error).message.replace(/\s*\(SCHEMA_REGISTRY_URL\)$/, ''),
    });
  }
  return { ok: problems.length === 0, problems, warnings, reached };
}
