// Settings that work and are unsafe beyond one machine: a secret sent over an unencrypted connection.
// Warned about at start and by `config check`, never refused (a test cluster may mean them). The local
// stack is exempt: its traffic never leaves the machine.
import type { Config } from './config.js';

export function riskySettings(config: Config): string[] {
  if (config.HOOKLEDGER_LOCAL_STACK) return [];
  const warnings: string[] = [];
  const registryLogin =
    config.SCHEMA_REGISTRY_USERNAME !== undefined || config.SCHEMA_REGISTRY_BEARER_TOKEN !== undefined;
  if (registryLogin && new URL(config.SCHEMA_REGISTRY_URL).protocol === 'http:')
    warnings.push(
      'SCHEMA_REGISTRY_URL is plain http and a registry login is set: the login crosses the network unencrypted (use https)',
    );
  if (config.ENRICH_CREDENTIALS !== undefined)
    for (const origin of config.ENRICH_ALLOWED_ENDPOINTS)
      if (origin.startsWith('http:'))
        warnings.push(
          `ENRICH_ALLOWED_ENDPOINTS: ${origin} is plain http and ENRICH_CREDENTIALS is set: they cross the network unencrypted (use https)`,
        );
  if (config.KAFKA_SECURITY_PROTOCOL === 'SASL_PLAINTEXT' && config.KAFKA_SASL_MECHANISM === 'PLAIN')
    warnings.push(
      'KAFKA_SECURITY_PROTOCOL=SASL_PLAINTEXT with KAFKA_SASL_MECHANISM=PLAIN: the Kafka password crosses the network unencrypted (use SASL_SSL)',
    );
  return warnings;
}
