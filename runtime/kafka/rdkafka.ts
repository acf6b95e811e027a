// The one place that knows how to build a librdkafka client (Confluent's @confluentinc/kafka-javascript,
// native API): connection settings, logs routed to pino, errors turned into Errors with their code, and
// promises around the callback API. Every Kafka path builds its clients through here.
import rdkafka, {
  type AdminClient as AdminClientType,
  type ConsumerGlobalConfig,
  type ConsumerTopicConfig,
  type IAdminClient,
  type KafkaConsumer,
  type LibrdKafkaError,
  type Metadata,
  type MetadataOptions,
  type OffsetSpec as OffsetSpecType,
  type Producer,
  type ProducerGlobalConfig,
  type ProducerTopicConfig,
} from '@confluentinc/kafka-javascript';
import type { Logger } from '../log.js';
import { describeSecurityFailure, securityFailureIn } from './security-failures.js';

// The package is CommonJS: take its classes from the default export (ESM sees module.exports there).
const {
  KafkaConsumer: RdConsumer,
  Producer: RdProducer,
  AdminClient: RdAdmin,
  CODES,
  OffsetSpec: RdOffsetSpec,
} = rdkafka as unknown as {
  KafkaConsumer: typeof KafkaConsumer;
  Producer: typeof Producer;
  AdminClient: typeof AdminClientType;
  CODES: typeof rdkafka.CODES;
  OffsetSpec: typeof OffsetSpecType;
};

/** Where listOffsets looks: OffsetSpec.EARLIEST, OffsetSpec.LATEST, or a timestamp. */
export const OffsetSpec = RdOffsetSpec;

export const ERRORS = CODES.ERRORS;

/** Where and as whom to connect. `properties` are passed to librdkafka as they are (TLS, SASL, …). */
export interface KafkaSettings {
  brokers: readonly string[];
  clientId: string;
  logger: Logger;
  properties?: Readonly<Record<string, string | number | boolean>>;
  /** TOPIC_PREFIX: the group-less reader's group.id starts with it (resource-ids.ts). */
  topicPrefix?: string;
}

/** A librdkafka error as an Error: its code, and the flags librdkafka sets on it. */
export class KafkaError extends Error {
  override name = 'KafkaError';
  readonly code: number;
  readonly retriable: boolean;
  readonly fatal: boolean;
  /** A transactional error after which the only way on is abortTransaction(). */
  readonly abortable: boolean;

  constructor(error: LibrdKafkaError | Error, context?: string) {
    const raw = error as Partial<LibrdKafkaError> & Error;
    super(context ? `${context}: ${raw.message}` : raw.message, { cause: error });
    this.code = typeof raw.code === 'number' ? raw.code : -1;
    this.retriable = raw.isRetriable === true;
    this.fatal = raw.isFatal === true;
    this.abortable = raw.isTxnRequiresAbort === true;
  }
}

export function toKafkaError(error: unknown, context?: string): KafkaError {
  if (error instanceof KafkaError) return error;
  if (error instanceof Error || (typeof error === 'object' && error !== null && 'message' in error))
    return new KafkaError(error as Error, context);
  return new KafkaError(new Error(String(error)), context);
}

/**
 * Another instance with the same transactional id or group.instance.id took over: this instance is
 * a zombie, and only a fresh start (or nothing) is correct.
 */
export function isFenced(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return (
    code === ERRORS.ERR__FENCED ||
    code === ERRORS.ERR_PRODUCER_FENCED ||
    code === ERRORS.ERR_INVALID_PRODUCER_EPOCH ||
    code === ERRORS.ERR_FENCED_INSTANCE_ID
  );
}

/**
 * A fatal error: the client can do nothing more and must be replaced. The flag and the code when the
 * binding gives them (produce() after a fatal error throws ERR__FATAL); but the binding emits
 * `event.error` as err2str's text alone (src/callbacks.cc: Nan::Error(err2str(err))), which its
 * LibrdKafkaError turns into code -1 and the message "fatal error" (librdkafka's "Local: Fatal
 * error"), and it has no fatal-error query: so that text is recognised too.
 */
export function isFatalError(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const e = error as {
    isFatal?: unknown;
    fatal?: unknown;
    code?: unknown;
    message?: unknown;
    cause?: unknown;
  };
  if (e.isFatal === true || e.fatal === true || e.code === ERRORS.ERR__FATAL) return true;
  if (typeof e.message === 'string' && /^(local: )?fatal error$/i.test(e.message)) return true;
  // A KafkaError keeps the binding's error as its cause (its own message has a context prefixed).
  return error instanceof KafkaError && isFatalError(e.cause);
}

/** librdkafka's syslog severities (0 emergency … 7 debug) as pino methods. */
export function pinoLevelForSeverity(severity: number): 'error' | 'warn' | 'info' | 'debug' {
  if (severity <= 3) return 'error';
  if (severity === 4) return 'warn';
  if (severity <= 6) return 'info';
  return 'debug';
}

/**
 * Connection lines librdkafka logs at warning or error level while it retries by itself (a broker
 * restarting, a connection refused, a coordinator not elected yet on a fresh cluster: `…: retrying`):
 * its callers see the outcome (a delivery report, a timeout) and say what it means, so these are debug.
 */
const TRANSIENT_LOG =
  /Connection refused|Disconnected|Connect to .* failed|1\/1 brokers are down|all brokers are down|Receive failed|Send failed|timed out|: retrying$/i;

interface RdLogEvent {
  severity: number;
  fac: string;
  message: string;
}

/**
 * Emitted on a client (with a KafkaError) when librdkafka logs a failure that retrying will not fix: wrong
 * credentials, a certificate not trusted. connect() and the admin port fail at once on it.
 */
export const SECURITY_FAILURE = 'hookledger.security-failure';

interface LogSource {
  on(event: 'event.log', listener: (e: RdLogEvent) => void): unknown;
  emit(event: string, ...args: unknown[]): boolean;
}

/** Turns librdkafka's log lines about wrong credentials or certificates into SECURITY_FAILURE events. */
export function watchSecurityFailures(client: LogSource, log?: Logger, mechanism?: string): void {
  client.on('event.log', ({ severity, message }) => {
    if (severity > 4) return;
    const failure = securityFailureIn(message, mechanism);
    if (failure === undefined) return;
    const error = new KafkaError(
      Object.assign(new Error(describeSecurityFailure(failure)), { code: failure.code }),
    );
    log?.error({ code: failure.code }, error.message);
    client.emit(SECURITY_FAILURE, error);
  });
}

/** A promise that rejects with the client's first SECURITY_FAILURE (never resolves); handled, so never unhandled. */
export function securityFailure(client: {
  once(event: string, listener: (error: KafkaError) => void): unknown;
}) {
  const failed = new Promise<never>((_, reject) => {
    client.once(SECURITY_FAILURE, reject);
  });
  failed.catch(() => {});
  return failed;
}

function routeLogs(client: LogSource, log: Logger, settings: KafkaSettings) {
  client.on('event.log', ({ severity, fac, message }) => {
    // A security failure is reported once, as an error, by watchSecurityFailures.
    if (securityFailureIn(message)) return;
    const level = TRANSIENT_LOG.test(message) ? 'debug' : pinoLevelForSeverity(severity);
    log[level]({ fac }, message);
  });
  watchSecurityFailures(client, log, saslMechanism(settings));
}

function saslMechanism(settings: KafkaSettings): string | undefined {
  const mechanism = settings.properties?.['sasl.mechanism'] ?? settings.properties?.['sasl.mechanisms'];
  return mechanism === undefined ? undefined : String(mechanism);
}

/** librdkafka's log level for a pino level: what pino would print, and nothing more. */
function rdLogLevel(pinoLevel: string): number {
  switch (pinoLevel) {
    case 'trace':
    case 'debug':
      return 7;
    case 'info':
      return 6;
    case 'warn':
      return 4;
    default:
      return 3;
  }
}

function common(settings: KafkaSettings, log: Logger): Record<string, string | number | boolean> {
  return {
    'bootstrap.servers': settings.brokers.join(','),
    'client.id': settings.clientId,
    // Logs come to JavaScript as 'event.log' events, then to pino.
    event_cb: true,
    log_level: rdLogLevel(log.level),
    ...settings.properties,
  };
}

/**
 * A producer, not yet connected. `properties` add to (and win over) the common settings; librdkafka
 * takes topic-level ones (acks, message.timeout.ms, partitioner) in the same object as defaults.
 */
export function createProducer(
  settings: KafkaSettings,
  properties: ProducerGlobalConfig & ProducerTopicConfig,
  component = 'producer',
): Producer {
  const log = settings.logger.child({ component });
  const producer = new RdProducer({
    ...common(settings, log),
    // Java clients place a key with murmur2: processors and any Java consumer agree on partitions.
    partitioner: 'murmur2_random',
    dr_cb: true,
    ...properties,
  } as ProducerGlobalConfig);
  routeLogs(producer, log, settings);
  return producer;
}

/**
 * Every consumer's defaults, under the connection's properties (KAFKA_CONFIG_FILE can change them) and
 * the caller's.
 *
 * `fetch.queue.backoff.ms`: once a partition's local queue is full (`queued.min.messages`,
 * `queued.max.messages.kbytes`), librdkafka fetches it again only after this long, 1 s by default. A
 * reader that empties its queue in less time (a changelog restore, a replay, a stage catching up on
 * a backlog) then waited with nothing to do: a restore's reader read 115,000 records/s with half the
 * machine idle, 213,000 at 10 ms (docs/benchmarks.md, "The consumer's fetch queue"). Kafka's Java
 * consumer has no such pause: it fetches again once its buffer is drained.
 */
export const CONSUMER_DEFAULTS: Readonly<Record<string, number>> = { 'fetch.queue.backoff.ms': 10 };

/**
 * A consumer, not yet connected. `topicProperties` are librdkafka's topic-level settings, which the
 * global ones do not set here: `auto.offset.reset` among them.
 */
export function createConsumer(
  settings: KafkaSettings,
  properties: ConsumerGlobalConfig,
  component = 'consumer',
  topicProperties: ConsumerTopicConfig = {},
): KafkaConsumer {
  const log = settings.logger.child({ component });
  const consumer = new RdConsumer(
    { ...CONSUMER_DEFAULTS, ...common(settings, log), ...properties } as ConsumerGlobalConfig,
    topicProperties,
  );
  routeLogs(consumer, log, settings);
  return consumer;
}

/** An admin client; it connects as it is created. */
export function createAdmin(settings: KafkaSettings, component = 'admin'): IAdminClient {
  const log = settings.logger.child({ component });
  const { event_cb: _eventCb, log_level: _level, ...config } = common(settings, log);
  const admin = RdAdmin.create(config);
  // Its log lines are not routed to pino; only the ones that say credentials or certificates are wrong.
  watchSecurityFailures(admin as unknown as LogSource, undefined, saslMechanism(settings));
  return admin;
}

/**
 * librdkafka's own verdict on a set of properties: its message for the first it refuses (an unknown
 * property, a bad value, a feature this build lacks), or undefined. Building a client only sets its
 * configuration; nothing connects.
 */
export function refusedProperty(properties: Readonly<Record<string, string>>): string | undefined {
  try {
    new RdProducer({ ...properties } as ProducerGlobalConfig);
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

/**
 * The client calls begun and not answered yet, by name. The binding runs them in Node's thread pool, so one
 * that never returns (a client abandoned while its broker was away) holds the process's exit
 * (runtime/exit.ts); a command that is still running after a clean close names them.
 */
const unanswered = new Map<string, number>();

function begun(name: string): () => void {
  unanswered.set(name, (unanswered.get(name) ?? 0) + 1);
  let answered = false;
  return () => {
    if (answered) return;
    answered = true;
    const left = (unanswered.get(name) ?? 1) - 1;
    if (left === 0) unanswered.delete(name);
    else unanswered.set(name, left);
  };
}

/** The Kafka client calls still waiting for their answer: `commitTransaction`, `disconnect ×2`. */
export function unansweredKafkaCalls(): string[] {
  return [...unanswered].map(([name, count]) => (count === 1 ? name : `${name} ×${count}`));
}

/** Connects a producer or consumer; rejects with a KafkaError after `timeoutMs`. */
export function connect<C extends Producer | KafkaConsumer>(client: C, timeoutMs = 10_000): Promise<C> {
  return new Promise((resolve, reject) => {
    // Wrong credentials or an untrusted certificate: say so now, not as a timeout after `timeoutMs`.
    const events = client as unknown as NodeJS.EventEmitter;
    const refused = (error: KafkaError) => reject(new KafkaError(error, 'connect'));
    events.once(SECURITY_FAILURE, refused);
    const answered = begun('connect');
    (client as Producer).connect({ timeout: timeoutMs }, (error) => {
      answered();
      events.off(SECURITY_FAILURE, refused);
      if (error) reject(toKafkaError(error, 'connect'));
      else resolve(client);
    });
  });
}

/** Disconnects; never rejects (a client that is already gone is fine). */
export function disconnect(client: Producer | KafkaConsumer, timeoutMs = 5_000): Promise<void> {
  return new Promise((resolve) => {
    if (!client.isConnected()) {
      resolve();
      return;
    }
    // After the timeout the promise resolves while the native call may go on: it stays counted until it ends.
    const timer = setTimeout(resolve, timeoutMs + 1_000);
    const answered = begun('disconnect');
    const done = () => {
      answered();
      clearTimeout(timer);
      resolve();
    };
    // A producer's disconnect takes a flush timeout; a consumer's (Client's) takes only the callback.
    if (typeof (client as Producer).produce === 'function') (client as Producer).disconnect(timeoutMs, done);
    else (client as KafkaConsumer).disconnect(done);
  });
}

/** Turns a node-style call `(…args, cb(err, value))` into a promise of a KafkaError or the value. */
export function call<T = void>(
  context: string,
  run: (callback: (error: LibrdKafkaError | null | undefined, value?: T) => void) => void,
): Promise<T> {
  return new Promise((resolve, reject) => {
    const answered = begun(context);
    try {
      run((error, value) => {
        answered();
        if (error) reject(toKafkaError(error, context));
        else resolve(value as T);
      });
    } catch (error) {
      answered();
      reject(toKafkaError(error, context));
    }
  });
}

/** The consumer methods the library has but its typings lack (lib/kafka-consumer.js). */
export type RdConsumer = KafkaConsumer & {
  incrementalAssign(assignments: { topic: string; partition: number; offset?: number }[]): void;
  incrementalUnassign(assignments: { topic: string; partition: number }[]): void;
  /** Inside a rebalance callback: whether the partitions were lost (not revoked in order). */
  assignmentLost(): boolean;
  rebalanceProtocol(): 'NONE' | 'EAGER' | 'COOPERATIVE';
  /** consume(n): wait the timeout for the first message only, then take what is already fetched. */
  setDefaultIsTimeoutOnlyForFirstMessage(only: boolean): void;
};

/** The admin client methods the library has but its typings lack (AdminClient inherits lib/client.js). */
export type RdAdminClient = IAdminClient & {
  /** A metadata request: the brokers, and the topics asked for (or known). */
  getMetadata(
    options: MetadataOptions,
    callback: (error: LibrdKafkaError | null | undefined, metadata: Metadata) => void,
  ): void;
};
