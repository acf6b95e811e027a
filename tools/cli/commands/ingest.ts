// `hookledger ingest`: the webhook receiver, configured by the environment (see docs/configuration.md).
import { runIngest } from '../../../ingest/run.js';
import { IngestWorkerStartError } from '../../../ingest/workers.js';
import { isClusterError } from '../../../runtime/kafka/admin.js';
import { RawTopicError } from '../../../schemas/topic-checks.js';
import { CONNECTION_HELP, type Command, CommandFailed, parseOptions, UsageError } from '../command.js';
import { STACK_ENV_HELP, withLocalStack } from '../stack-env.js';

export const command: Command = {
  help: [
    'usage: hookledger ingest [--workers n]',
    '',
    'Receives webhooks at POST /webhooks/<source> and stores each in webhooks.raw before answering 200.',
    'A request whose signature does not match gets 401 and is kept in webhooks.quarantine, within a bound',
    'per source (`hookledger quarantine` lists and promotes them; docs/cli.md "Quarantine after a key mix-up").',
    'An unknown source gets 404. Keys under 20 bytes, placeholders and unsigned sources not named',
    'in INGEST_UNSIGNED_SOURCES stop the start with one line.',
    'Serves /healthz, /readyz and /metrics on INGEST_OPS_HOST:INGEST_OPS_PORT (127.0.0.1:9091), never on',
    'the webhook port; /metrics counts the authentic webhook ids answered with anything but 200 and not',
    'stored since, and the age of the oldest (docs/operating.md: alerts and a dashboard).',
    'Configured by environment variables: KAFKA_BROKERS, SCHEMA_REGISTRY_URL, TOPIC_PREFIX,',
    'HOOKLEDGER_SOURCES or HOOKLEDGER_SOURCES_FILE (or their old names, HOOKSTREAM_SOURCES[_FILE]),',
    'INGEST_UNSIGNED_SOURCES, INGEST_HOST, INGEST_PORT,',
    'INGEST_OPS_HOST, INGEST_OPS_PORT, INGEST_BODY_LIMIT, INGEST_MAX_CONNECTIONS, INGEST_REQUEST_TIMEOUT_MS,',
    'INGEST_KEEP_ALIVE_TIMEOUT_MS, INGEST_KEPT_QUERY_PARAMETERS, INGEST_DEADLINE_MS, INGEST_LINGER_MS,',
    'INGEST_DRAIN_DELAY_MS, INGEST_MAX_BATCH_RECORDS, INGEST_MAX_PENDING_BYTES, INGEST_MAX_RECEIVING_BYTES,',
    'INGEST_WORKERS,',
    'INGEST_QUARANTINE, INGEST_QUARANTINE_PER_SECOND, INGEST_QUARANTINE_BYTES_PER_SECOND,',
    'INGEST_QUARANTINE_TOTAL_PER_SECOND, INGEST_QUARANTINE_TOTAL_BYTES_PER_SECOND,',
    'SCHEMA_REGISTRY_TIMEOUT, SCHEMA_REGISTRY_AUTO_REGISTER,',
    'INGEST_TLS_CERT_FILE and INGEST_TLS_KEY_FILE (native HTTPS), LOG_LEVEL.',
    'Logs JSON lines on stdout: at LOG_LEVEL=info the requests by status every 10 s (when there were any),',
    'at debug one line per request. A port in use, Kafka or the registry out of reach stops the start',
    'with one line, within seconds.',
    'Stops gracefully on SIGTERM or SIGINT: no new requests, in-flight ones answered, queue flushed.',
    '',
    '  --workers <n>   HTTP workers on INGEST_PORT (INGEST_WORKERS, default 1), each a process with its own',
    '                  producer (node:cluster); one /readyz and /metrics for all. More than 1 where ingest',
    '                  has more than one core to itself: one Node thread answers some 10,000 webhooks/s.',
    '',
    CONNECTION_HELP,
    '',
    STACK_ENV_HELP,
  ].join('\n'),
  async run(args) {
    const { values } = parseOptions(args, { workers: { type: 'string' } });
    if (values.workers !== undefined && !/^[1-9]\d*$/.test(values.workers))
      throw new UsageError(`--workers: expected a whole number of workers from 1, got ${values.workers}`);
    const env = {
      ...process.env,
      ...(values.workers === undefined ? {} : { INGEST_WORKERS: values.workers }),
    };
    try {
      return await runIngest(withLocalStack(env));
    } catch (error) {
      if (error instanceof RawTopicError || error instanceof IngestWorkerStartError)
        throw new CommandFailed(error.message);
      // The cluster cannot be reached (or refuses) for the start-up check: one line, not a stack.
      if (isClusterError(error)) {
        throw new CommandFailed(`cannot check the topics on KAFKA_BROKERS: ${(error as Error).message}`);
      }
      throw error;
    }
  },
};
