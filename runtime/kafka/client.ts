// The kafkajs client factory: the one place that builds a Kafka client and routes its logs to pino.
import kafkajs, { type Kafka, type KafkaConfig, type LogEntry } from 'kafkajs';
import type { Logger } from '../log.js';

// kafkajs is CommonJS and Node's ESM loader does not see all of its named exports (ConfigResourceTypes,
// errors, …): take values from the default export, types from the named ones.
const { Kafka: KafkaClient, logLevel: KafkaLogLevel } = kafkajs;

export interface CreateKafkaOptions {
  brokers: string[];
  clientId: string;
  logger: Logger;
  /** Passed through to kafkajs (ssl, sasl, retry, timeouts, …). */
  overrides?: Omit<KafkaConfig, 'brokers' | 'clientId' | 'logLevel' | 'logCreator'>;
}

/** A kafkajs client whose logs go to `logger.child({ component: 'kafkajs' })` at the logger's level. */
export function createKafka({ brokers, clientId, logger, overrides = {} }: CreateKafkaOptions): Kafka {
  const log = logger.child({ component: 'kafkajs' });
  return new KafkaClient({
    ...overrides,
    brokers,
    clientId,
    logLevel: kafkaLevelFor(log.level),
    logCreator: () => (entry) => writeEntry(log, entry),
  });
}

/** The kafkajs level that lets through what the pino level would print, and nothing more. */
export function kafkaLevelFor(pinoLevel: string): number {
  switch (pinoLevel) {
    case 'trace':
    case 'debug':
      return KafkaLogLevel.DEBUG;
    case 'info':
      return KafkaLogLevel.INFO;
    case 'warn':
      return KafkaLogLevel.WARN;
    case 'error':
    case 'fatal':
      return KafkaLogLevel.ERROR;
    default:
      return KafkaLogLevel.NOTHING;
  }
}

/**
 * kafkajs warns this for every idempotent producer whose retries are limited. Ingest limits them on
 * purpose (its sends must end before the request deadline): a producer that gives up is replaced by
 * a new one with a new producer id, and the delivery is answered 503 for the platform to retry. The
 * warning would repeat at every start and replacement without telling anyone anything, so: debug.
 */
const LIMITED_RETRIES_WARNING = 'Limiting retries for the idempotent producer may invalidate EoS guarantees';

/** kafkajs's level for an entry, as a pino method name. */
export function pinoLevelFor(
  entry: Pick<LogEntry, 'namespace' | 'level' | 'log'>,
): 'error' | 'warn' | 'info' | 'debug' {
  // The connection logs every error response at ERROR (`Response InitProducerId(key: 22, version: 1)`
  // with the error beside it), even the ones its caller expects and handles: a coordinator that is
  // loading or moved (retried), a topic that already exists, metadata for a topic not yet created.
  // The caller decides whether it is an error and logs or throws it then, so these stay at debug.
  if (entry.namespace === 'Connection' && entry.log.message.startsWith('Response ')) return 'debug';
  if (entry.namespace === 'Producer' && entry.log.message === LIMITED_RETRIES_WARNING) return 'debug';
  switch (entry.level) {
    case KafkaLogLevel.ERROR:
      return 'error';
    case KafkaLogLevel.WARN:
      return 'warn';
    case KafkaLogLevel.INFO:
      return 'info';
    default:
      return 'debug';
  }
}

function writeEntry(log: Logger, entry: LogEntry): void {
  const {
    message,
    timestamp: _timestamp,
    logger: _logger,
    ...extra
  } = entry.log as LogEntry['log'] & {
    logger?: string;
  };
  log[pinoLevelFor(entry)]({ ...extra, namespace: entry.namespace }, message);
}
