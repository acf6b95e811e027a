// `hookledger ingest`: the webhook receiver, configured by the environment (see README "Configuration").
import { runIngest } from '../../../ingest/main.js';
import { isClusterError } from '../../../runtime/kafka/admin.js';
import { RawTopicError } from '../../../schemas/topic-checks.js';
import { type Command, CommandFailed, parseOptions } from '../command.js';

export const command: Command = {
  help: [
    'usage: hookledger ingest',
    '',
    'Receives webhooks at POST /webhooks/<source> and stores each in webhooks.raw before answering 200.',
    'Configured by environment variables: KAFKA_BROKERS, SCHEMA_REGISTRY_URL, TOPIC_PREFIX,',
    'HOOKLEDGER_SOURCES or HOOKLEDGER_SOURCES_FILE, INGEST_HOST, INGEST_PORT, INGEST_BODY_LIMIT,',
    'INGEST_DEADLINE_MS, INGEST_LINGER_MS, INGEST_MAX_BATCH_RECORDS, INGEST_MAX_PENDING_BYTES,',
    'INGEST_TLS_CERT_FILE and INGEST_TLS_KEY_FILE (native HTTPS), LOG_LEVEL.',
    'Stops gracefully on SIGTERM or SIGINT: no new requests, in-flight ones answered, queue flushed.',
  ].join('\n'),
  async run(args) {
    parseOptions(args, {});
    try {
      return await runIngest();
    } catch (error) {
      if (error instanceof RawTopicError) throw new CommandFailed(error.message);
      // The cluster cannot be reached (or refuses) for the start-up check: one line, not a stack.
      if (isClusterError(error)) {
        throw new CommandFailed(`cannot check the raw topic on KAFKA_BROKERS: ${(error as Error).message}`);
      }
      throw error;
    }
  },
};
