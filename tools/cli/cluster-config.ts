// The configuration of a command that talks to Kafka and the registry (topics, tail, replay, redrive,
// quarantine): the environment or the local stack it finds, validated, then the brokers checked to accept
// a connection and the registry to answer (its TLS and login included), as ingest and process check them.
// A wrong or stopped cluster, or a registry out of reach, untrusted or refusing the login, is then one line
// within seconds naming the variable, rather than an admin request's 10 s timeout or a raw TLS error from
// the first schema lookup.
import { type Config, loadConfig } from '../../runtime/config.js';
import { assertBrokersReachable } from '../../runtime/kafka/reachable.js';
import { registryAccess } from '../../schemas/registry-access.js';
import { assertRegistryReachable } from '../../schemas/registry-reachable.js';
import { withLocalStack } from './stack-env.js';

export async function clusterConfig(
  env: NodeJS.ProcessEnv,
  { registry = true }: { registry?: boolean } = {},
): Promise<Config> {
  const config = loadConfig(withLocalStack(env));
  await assertBrokersReachable(config.KAFKA_BROKERS);
  if (registry) await assertRegistryReachable(registryAccess(config));
  return config;
}
