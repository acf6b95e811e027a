// The environment, validated once at start-up: a bad value stops the process with one line naming it.
import { hostname } from 'node:os';
import { z } from 'zod';
import { formatDuration, parseDurationOrMs } from './duration.js';
import { resolveSecretFiles, SECRET_VARIABLES } from './secret-files.js';

/** INGEST_BODY_LIMIT's default: 1 MiB, the platform's own limit for a delivery. */
export const DEFAULT_INGEST_BODY_LIMIT = 1_048_576;

/**
 * The contract's Full query (§4.3): every field of §2.2, with the OperationFailure branch. The enrich
 * stage's default ENRICH_QUERY.
 */
export const FULL_ENERGY_SWITCH_QUERY =
  'query EnergySwitch($id: ID!) { getEnergySwitch(id: $id) { __typename ... on OperationFailure { description(locale: en_GB) } ... on EnergySwitch { id date user { id tenantId } userSwitchReferenceId postcode provider { code name } tariffName projectedSpend { currency amount } savings { currency amount } fuelType fuelsSwitched commission { fuelsWaitingForUpdate fuelsWithSwitchTerminated fuelsWithCommissionExpected fuelsWithCommissionReceived statusDate status } } } }';

/** The platform retries a failed delivery for 72 hours; a shorter window would let retries through. */
export const PLATFORM_RETRY_WINDOW_MS = 72 * 3_600_000;

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/**
 * A duration variable, in milliseconds: `250ms`, `10s`, `5m`, `72h`, `7d`, or a bare number of
 * milliseconds (the form the *_MS variables always took). Every duration variable reads this way.
 */
const duration = (example: string) =>
  z.string().transform((text, ctx) => {
    const ms = parseDurationOrMs(text);
    if (ms === undefined) {
      ctx.addIssue({ code: 'custom', message: `expected a duration such as ${example}` });
      return z.NEVER;
    }
    return ms;
  });

/** The platform gives up on a delivery after this (the contract's "200 expected within 30 s"). */
const PLATFORM_TIMEOUT_MS = 30_000;
/** A request's headers must be in within this (at most INGEST_REQUEST_TIMEOUT_MS); ingest's deadline starts after them. */
export const INGEST_HEADERS_TIMEOUT_MS = 5_000;

/** A duration within bounds, the bounds said as durations. */
const boundedDuration = (example: string, min: number, max: number, tooLong?: string) =>
  duration(example).pipe(
    z
      .number()
      .int()
      .min(min, `must be at least ${formatDuration(min)}`)
      .max(max, tooLong ?? `must be at most ${formatDuration(max)}`),
  );

/** `UTC`, `Z` or `±HH:MM` (`±HHMM`) as minutes east of UTC; offsets in use span −12:00 to +14:00. */
function utcOffsetMinutes(text: string): number | undefined {
  const trimmed = text.trim();
  if (/^(UTC|Z)$/i.test(trimmed)) return 0;
  const m = /^([+-])(\d{2}):?(\d{2})$/.exec(trimmed);
  if (m === null) return undefined;
  const minutes = (m[1] === '-' ? -1 : 1) * (Number(m[2]) * 60 + Number(m[3]));
  return Number(m[3]) < 60 && minutes >= -12 * 60 && minutes <= 14 * 60 ? minutes : undefined;
}

const port = z.coerce.number().int().min(0).max(65_535);
const bytes = z.coerce.number().int().positive();
const upperCase = z.string().transform((s) => s.trim().toUpperCase());
const flag = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');

/** Every variable hookledger reads, with its default. Names are the variables themselves. */
const environment = z.object({
  KAFKA_BROKERS: z
    .string()
    .min(1, 'expected host:port[,host:port…]')
    .transform((s) => s.split(',').map((b) => b.trim()))
    .pipe(z.array(z.string().regex(/^[^\s:]+:\d+$/, 'expected host:port[,host:port…]')).min(1)),
  SCHEMA_REGISTRY_URL: z.url({
    protocol: /^https?$/,
    message: 'expected the http(s) URL of a Confluent-API schema registry',
  }),
  // How to reach a secured cluster and registry: mapped to librdkafka properties in one place
  // (runtime/kafka/client-properties.ts), to the registry client in schemas/registry-access.ts.
  KAFKA_SECURITY_PROTOCOL: upperCase
    .pipe(z.enum(['PLAINTEXT', 'SSL', 'SASL_PLAINTEXT', 'SASL_SSL']))
    .optional(),
  KAFKA_SASL_MECHANISM: upperCase
    .pipe(z.enum(['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512', 'OAUTHBEARER']))
    .optional(),
  KAFKA_SASL_USERNAME: z.string().optional(),
  KAFKA_SASL_PASSWORD: z.string().optional(),
  KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL: z
    .url({ message: "expected the http(s) URL of the identity provider's token endpoint" })
    .optional(),
  KAFKA_SASL_OAUTHBEARER_CLIENT_ID: z.string().optional(),
  KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET: z.string().optional(),
  KAFKA_SASL_OAUTHBEARER_SCOPE: z.string().optional(),
  KAFKA_SSL_CA_FILE: z.string().optional(),
  KAFKA_SSL_CERT_FILE: z.string().optional(),
  KAFKA_SSL_KEY_FILE: z.string().optional(),
  KAFKA_SSL_KEY_PASSWORD: z.string().optional(),
  /** A Java-style properties file of any other librdkafka settings, checked by librdkafka at start-up. */
  KAFKA_CONFIG_FILE: z.string().optional(),
  SCHEMA_REGISTRY_USERNAME: z.string().optional(),
  SCHEMA_REGISTRY_PASSWORD: z.string().optional(),
  SCHEMA_REGISTRY_BEARER_TOKEN: z.string().optional(),
  SCHEMA_REGISTRY_CA_FILE: z.string().optional(),
  /**
   * false: the services only look schemas up, never register one (`hookledger topics` still registers),
   * so their registry login needs read rights only (docs/security.md).
   */
  SCHEMA_REGISTRY_AUTO_REGISTER: flag.default(true),
  /**
   * How long one registry request may go unanswered (a frozen registry accepts connections and never
   * answers): the processors' poll loop waits no longer, so keep it under the transaction timeout.
   */
  SCHEMA_REGISTRY_TIMEOUT: duration('5s or 500ms')
    .default(5_000)
    .pipe(z.number().int().min(100, 'expected at least 100ms').max(120_000, 'expected at most 2m')),
  TOPIC_PREFIX: z
    .string()
    .regex(/^[a-zA-Z0-9._-]*$/, 'expected letters, digits, ".", "_" or "-"')
    .default(''),
  /** Partition count for new topics (`hookledger topics`); unset: the raw topic's, else 12. */
  TOPIC_PARTITIONS: z.coerce.number().int().positive().optional(),
  DEDUPE_WINDOW: duration('7d or 72h')
    .default(7 * 86_400_000)
    .refine((ms) => ms >= PLATFORM_RETRY_WINDOW_MS, {
      message: `must be at least the platform's retry window (${PLATFORM_RETRY_WINDOW_MS / 3_600_000}h)`,
    }),
  /**
   * The router dead-letters (`too-old`) a delivery received longer than this after its `webhook.date`:
   * the platform's 72 h of retries plus 1 h of slack (its queueing, the two clocks). Never under 72 h,
   * never over DEDUPE_WINDOW: a replay then meets either the dedupe or this limit.
   */
  WEBHOOK_MAX_AGE: duration('73h')
    .default(PLATFORM_RETRY_WINDOW_MS + 3_600_000)
    .refine((ms) => ms >= PLATFORM_RETRY_WINDOW_MS, {
      message: `must be at least the platform's retry window (${PLATFORM_RETRY_WINDOW_MS / 3_600_000}h)`,
    }),
  /** …and (`from-the-future`) one whose `webhook.date` is this far after the time ingest received it. */
  WEBHOOK_MAX_AHEAD: duration('5m').default(5 * 60_000),
  /**
   * The zone the router reads a zone-less `webhook.date` in: `UTC` or a fixed offset, never the
   * machine's zone nor a named one (its offset moves with daylight saving), so live and replay agree.
   * Unset: such a date is dead-lettered. Minutes east of UTC.
   */
  WEBHOOK_DATE_ZONE: z
    .string()
    .transform((text, ctx) => {
      const minutes = utcOffsetMinutes(text);
      if (minutes === undefined) {
        ctx.addIssue({ code: 'custom', message: 'expected UTC or an offset such as +01:00 or -05:30' });
        return z.NEVER;
      }
      return minutes;
    })
    .optional(),
  /** Comma-separated names of the sources allowed `"signature": "none"` (ingest/sources.ts refuses the others). */
  INGEST_UNSIGNED_SOURCES: z.string().optional(),
  /**
   * Query parameters whose values a record keeps, comma-separated (matched lower-case); every other
   * value is stored as `***`: a URL may carry a token, and webhooks.raw keeps records for ever.
   */
  INGEST_KEPT_QUERY_PARAMETERS: z
    .string()
    .default('')
    .transform(
      (text) =>
        new Set(
          text
            .split(',')
            .map((name) => name.trim().toLowerCase())
            .filter(Boolean),
        ) as ReadonlySet<string>,
    ),
  INGEST_HOST: z.string().min(1).default('0.0.0.0'),
  INGEST_PORT: port.default(8080),
  /**
   * Ingest's /healthz, /readyz and /metrics: a port of their own, on the loopback unless told otherwise
   * (in Kubernetes, the pod's address: `0.0.0.0` with no Service or Ingress route to the port).
   */
  INGEST_OPS_HOST: z.string().min(1).default('127.0.0.1'),
  INGEST_OPS_PORT: port.default(9091),
  INGEST_BODY_LIMIT: bytes.default(DEFAULT_INGEST_BODY_LIMIT),
  INGEST_DEADLINE_MS: boundedDuration(
    '10s',
    1,
    PLATFORM_TIMEOUT_MS - INGEST_HEADERS_TIMEOUT_MS - 1_000,
    `must stay under the platform's 30 s timeout, which starts before the request's headers are in (up to ${INGEST_HEADERS_TIMEOUT_MS / 1_000} s) and the deadline after`,
  ).default(10_000),
  /**
   * On SIGTERM, how long /readyz answers 503 while the listener still serves, before it closes: load
   * balancers and Kubernetes endpoints stop sending meanwhile, so a rolling update refuses no webhook.
   */
  INGEST_DRAIN_DELAY_MS: boundedDuration('5s', 0, 120_000).default(5_000),
  /** Connections ingest holds open at most (more are closed as they arrive). */
  INGEST_MAX_CONNECTIONS: z.coerce.number().int().positive().default(1_024),
  /** Time to receive a whole request, headers and body (slow clients are cut). */
  INGEST_REQUEST_TIMEOUT_MS: boundedDuration('10s', 1_000, 29_000).default(10_000),
  /** Idle time before a kept-alive connection is closed. */
  INGEST_KEEP_ALIVE_TIMEOUT_MS: boundedDuration('10s', 1_000, 65_000).default(10_000),
  INGEST_LINGER_MS: boundedDuration('2ms', 0, 1_000).default(2),
  INGEST_MAX_BATCH_RECORDS: z.coerce.number().int().positive().default(500),
  INGEST_MAX_PENDING_BYTES: bytes.default(64 * 1_048_576),
  /**
   * HTTP workers per `ingest` (node:cluster: child processes sharing INGEST_PORT), each with its own
   * producer; one /healthz, /readyz and /metrics for all. 1 by default: a container's CPU limit is not
   * what the host's core count says, and a second worker pays only where a second core is free.
   */
  INGEST_WORKERS: z.coerce.number().int().min(1).max(64).default(1),
  /**
   * Bytes of request bodies being received at once (each request's Content-Length, or INGEST_BODY_LIMIT
   * when it has none): past it, 503 before the body is read. Bodies are read before their signature can
   * be checked, so this, not the connections, bounds what unsigned traffic can make ingest hold.
   */
  INGEST_MAX_RECEIVING_BYTES: bytes.default(64 * 1_048_576),
  /** Requests to a signed source whose signature fails are kept in webhooks.quarantine (still 401). */
  INGEST_QUARANTINE: flag.default(true),
  /** Per source and ingest instance: quarantined requests per second (bursts up to a minute's worth). */
  INGEST_QUARANTINE_PER_SECOND: z.coerce.number().positive().default(10),
  /** Per source and ingest instance: quarantined bytes per second (bursts up to a minute's worth). */
  INGEST_QUARANTINE_BYTES_PER_SECOND: bytes.default(32_768),
  /** All sources together, per ingest instance: quarantined requests per second (bursts up to a minute's worth). */
  INGEST_QUARANTINE_TOTAL_PER_SECOND: z.coerce.number().positive().default(20),
  /** All sources together, per ingest instance: quarantined bytes per second (bursts up to a minute's worth). */
  INGEST_QUARANTINE_TOTAL_BYTES_PER_SECOND: bytes.default(65_536),
  /** How long webhooks.quarantine keeps a request (`hookledger topics` sets it on the topic). */
  QUARANTINE_RETENTION: duration('7d or 72h').default(7 * 86_400_000),
  INGEST_TLS_CERT_FILE: z.string().optional(),
  INGEST_TLS_KEY_FILE: z.string().optional(),
  HOOKLEDGER_LOCAL_STACK: flag.default(false),
  /** The processors' /healthz, /readyz and /metrics. */
  PROCESSOR_HOST: z.string().min(1).default('0.0.0.0'),
  PROCESSOR_PORT: port.default(9090),
  /**
   * How long a silent processor keeps its partitions (a SIGKILLed one holds them this long, which bounds
   * a takeover). Under 6 s only where the brokers' group.min.session.timeout.ms allows it (6 s by
   * default): they refuse the JoinGroup otherwise, and the stage stops saying so (errors.ts).
   */
  PROCESSOR_SESSION_TIMEOUT_MS: boundedDuration('30s', 1_000, 300_000).default(30_000),
  /** Short, so a dead owner's open transaction blocks read_committed readers for seconds only. */
  PROCESSOR_TRANSACTION_TIMEOUT_MS: boundedDuration('10s', 1_000, 900_000).default(10_000),
  /**
   * Live, a processor's transaction commits this long after its first record (Kafka Streams'
   * commit.interval.ms): a record is visible to read_committed readers about half of it, plus the commit,
   * after it arrives. Shorter is fresher and costs the brokers a transaction (its markers on every
   * partition it wrote) more often; a backlog commits at most once a second whatever this is.
   */
  PROCESSOR_COMMIT_INTERVAL_MS: boundedDuration('25ms', 5, 10_000).default(25),
  /**
   * Stream threads per `process` (Kafka Streams' num.stream.threads): each a child process (librdkafka's
   * binding cannot be loaded in a worker_thread) with its own consumer, producer and tasks. 1 by default, as in Kafka Streams: a container's CPU limit is not what
   * the host's core count says, and a second thread pays only where a second core is free.
   */
  PROCESSOR_THREADS: z.coerce.number().int().min(1).max(64).default(1),
  /**
   * Where the processors keep their state: `memory` (rebuilt from the changelogs at every start) or
   * `lmdb` (on disk under PROCESSOR_STATE_DIR, checkpointed: a restart restores only the changelog's tail).
   */
  PROCESSOR_STATE_STORE: z.enum(['memory', 'lmdb']).default('memory'),
  /** The root of the state directories (one per partition) when PROCESSOR_STATE_STORE=lmdb. */
  PROCESSOR_STATE_DIR: z.string().min(1).optional(),
  /**
   * Standby replicas (Kafka Streams' num.standby.replicas), with PROCESSOR_STATE_STORE=lmdb only: 1 keeps a
   * warm copy of every input partition this instance does not own (followed from its changelog), so a
   * takeover restores only the last seconds. 0 or 1: librdkafka's assignors cannot place standbys, so a
   * count of them would mean nothing more.
   */
  PROCESSOR_STANDBY_REPLICAS: z.coerce.number().int().min(0).max(1).default(0),
  /**
   * This process instance among the processors of one app: the transactional id and the consumer
   * group's static member id are `<app>-<instance>`. Unique per live instance (two instances with one
   * id fence each other); keep it across restarts, so a restarted instance gets its partitions back
   * at once instead of after the session timeout. Defaults to the host name (a pod's name).
   */
  HOOKLEDGER_INSTANCE_ID: z
    .string()
    .regex(/^[A-Za-z0-9._-]+$/, 'expected letters, digits, ".", "_" or "-"')
    .default(hostname()),
  /**
   * The enrich stage (processors/enrich, docs/enrich.md): off unless true. It fetches, for an energy
   * switch delivery that lacks fields of ENRICH_QUERY, the full record from the delivery's `query.api`
   * when that URL's origin is in ENRICH_ALLOWED_ENDPOINTS.
   */
  ENRICH: flag.default(false),
  /** Comma-separated triggers to enrich; empty: every EnergySwitch trigger but deletions. */
  ENRICH_TRIGGERS: z
    .string()
    .default('')
    .transform((text) =>
      text
        .split(',')
        .map((t) => t.trim())
        .filter(Boolean),
    )
    .pipe(
      z.array(
        z
          .string()
          .regex(
            /^EnergySwitch[A-Z][A-Za-z]*$/,
            'expected EnergySwitch triggers such as EnergySwitchUpdated',
          ),
      ),
    ),
  /** The full query (GraphQL, one `$id` variable); default: the contract's Full query. */
  ENRICH_QUERY: z
    .string()
    .default(FULL_ENERGY_SWITCH_QUERY)
    .refine((q) => /\$id\b/.test(q), { message: 'expected a GraphQL query with an $id variable' })
    .refine(balancedBraces, { message: 'expected a GraphQL query with balanced braces' }),
  /** Origins a delivery's `query.api` may name for a fetch, comma-separated: `https://api.example.com`. */
  ENRICH_ALLOWED_ENDPOINTS: z
    .string()
    .default('')
    .transform((text, ctx) => {
      const origins = new Set<string>();
      for (const item of text
        .split(',')
        .map((t) => t.trim())
        .filter(Boolean)) {
        const origin = originOf(item);
        if (origin === undefined) {
          ctx.addIssue({
            code: 'custom',
            message: `expected http(s) origins such as https://api.example.com, got ${JSON.stringify(item)}`,
          });
          return z.NEVER;
        }
        origins.add(origin);
      }
      return origins as ReadonlySet<string>;
    }),
  /** The credentials sent with each fetch (a secret: ENRICH_CREDENTIALS_FILE reads it from a file). */
  ENRICH_CREDENTIALS: z.string().optional(),
  /** The header that carries them, and the scheme before them (`none`: the credentials alone). */
  ENRICH_AUTH_HEADER: z
    .string()
    .regex(/^[A-Za-z0-9-]+$/, 'expected a header name such as Authorization')
    .default('Authorization'),
  ENRICH_AUTH_SCHEME: z
    .string()
    .regex(/^[A-Za-z0-9._-]+$/, 'expected a scheme such as Bearer, or none')
    .default('Bearer'),
  /** One request's timeout. */
  ENRICH_TIMEOUT: boundedDuration('2s', 100, 60_000).default(2_000),
  /** Requests in flight at most per instance. */
  ENRICH_CONCURRENCY: z.coerce
    .number()
    .int()
    .min(1, 'expected at least 1')
    .max(256, 'expected at most 256')
    .default(8),
  /** Requests per second per endpoint and instance. */
  ENRICH_RATE_LIMIT: z.coerce.number().positive('expected requests per second, above 0').default(50),
  /** Attempts after the first, on 429, 5xx, timeouts and refused connections. */
  ENRICH_RETRIES: z.coerce.number().int().min(0).max(20, 'expected at most 20').default(4),
  /** First back-off (doubling, full jitter, at most ENRICH_RETRY_BUDGET); Retry-After wins when longer. */
  ENRICH_BACKOFF: boundedDuration('200ms', 1, 60_000).default(200),
  /** One fetch's attempts and waits together; past it the batch is retried later (nothing dead-lettered). */
  ENRICH_RETRY_BUDGET: boundedDuration('4s', 100, 300_000).default(4_000),
  /** Fetches in a row that ran out of retries before the endpoint's circuit opens (the stage pauses). */
  ENRICH_BREAKER_FAILURES: z.coerce.number().int().min(1).max(1_000).default(5),
  /** How long an open circuit waits before a probe (doubling after a failed probe, up to 8×). */
  ENRICH_BREAKER_COOLDOWN: boundedDuration('10s', 100, 3_600_000).default(10_000),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

/** The least time a request's write gets past its batch's linger (a produce acknowledged by all replicas). */
const MIN_DEADLINE_OVER_LINGER_MS = 100;

/** Rules across variables, each reported on the variable to change. */
const consistentEnvironment = environment.superRefine((config, ctx) => {
  // A delivery dated up to WEBHOOK_MAX_AHEAD after its receipt is still accepted WEBHOOK_MAX_AGE after its
  // date: a retry of it may come that long after the first delivery was received, and the id must still be
  // remembered then, or the retry is routed a second time.
  const retriesAcceptedFor = config.WEBHOOK_MAX_AGE + config.WEBHOOK_MAX_AHEAD;
  if (config.DEDUPE_WINDOW < retriesAcceptedFor)
    ctx.addIssue({
      code: 'custom',
      path: ['DEDUPE_WINDOW'],
      message: `must be at least WEBHOOK_MAX_AGE + WEBHOOK_MAX_AHEAD (${formatDuration(config.WEBHOOK_MAX_AGE)} + ${formatDuration(config.WEBHOOK_MAX_AHEAD)} = ${formatDuration(retriesAcceptedFor)}): a retry accepted after the window would otherwise be routed again`,
    });
  // A request waits up to INGEST_LINGER_MS for its batch, then a produce with acks=all; librdkafka also
  // refuses a message.timeout.ms (the deadline) not above its own linger.ms: every request would get 503.
  if (config.INGEST_DEADLINE_MS < config.INGEST_LINGER_MS + MIN_DEADLINE_OVER_LINGER_MS)
    ctx.addIssue({
      code: 'custom',
      path: ['INGEST_DEADLINE_MS'],
      message: `must be at least INGEST_LINGER_MS + ${MIN_DEADLINE_OVER_LINGER_MS} ms (${config.INGEST_LINGER_MS + MIN_DEADLINE_OVER_LINGER_MS} ms): a request waits that long for its batch, then for Kafka's acknowledgement`,
    });
  if (config.INGEST_MAX_RECEIVING_BYTES < config.INGEST_BODY_LIMIT)
    ctx.addIssue({
      code: 'custom',
      path: ['INGEST_MAX_RECEIVING_BYTES'],
      message: `must be at least INGEST_BODY_LIMIT (${config.INGEST_BODY_LIMIT} bytes): a body of that size could never be received`,
    });
  if (config.ENRICH && config.ENRICH_ALLOWED_ENDPOINTS.size === 0)
    ctx.addIssue({
      code: 'custom',
      path: ['ENRICH_ALLOWED_ENDPOINTS'],
      message:
        'must name at least one origin when ENRICH=true: no fetch goes to an address only a body names',
    });
  // A batch holds about two fetches' worth of time and must commit within the transaction timeout. Only
  // when the stage runs: a short transaction timeout must not stop processors that do not enrich.
  if (config.ENRICH && 2 * config.ENRICH_RETRY_BUDGET >= config.PROCESSOR_TRANSACTION_TIMEOUT_MS)
    ctx.addIssue({
      code: 'custom',
      path: ['ENRICH_RETRY_BUDGET'],
      message: `must be under half of PROCESSOR_TRANSACTION_TIMEOUT_MS (${formatDuration(config.PROCESSOR_TRANSACTION_TIMEOUT_MS)})`,
    });
  // A transaction must commit well within its timeout, a catch-up one (up to a quarter of it) too.
  if (4 * config.PROCESSOR_COMMIT_INTERVAL_MS > config.PROCESSOR_TRANSACTION_TIMEOUT_MS)
    ctx.addIssue({
      code: 'custom',
      path: ['PROCESSOR_COMMIT_INTERVAL_MS'],
      message: `must be at most a quarter of PROCESSOR_TRANSACTION_TIMEOUT_MS (${formatDuration(config.PROCESSOR_TRANSACTION_TIMEOUT_MS)})`,
    });
  // A fetch waits for its turn under the rate limit only once it holds one of ENRICH_CONCURRENCY slots: a
  // wait past the budget fails it (as throttled), and the batch, read again, fails the same way for ever.
  const slotsMs = (1_000 * config.ENRICH_CONCURRENCY) / config.ENRICH_RATE_LIMIT;
  if (config.ENRICH && 2 * slotsMs >= config.ENRICH_RETRY_BUDGET)
    ctx.addIssue({
      code: 'custom',
      path: ['ENRICH_RATE_LIMIT'],
      message: `must start ENRICH_CONCURRENCY (${config.ENRICH_CONCURRENCY}) requests within half of ENRICH_RETRY_BUDGET (${formatDuration(config.ENRICH_RETRY_BUDGET)}): above ${(2_000 * config.ENRICH_CONCURRENCY) / config.ENRICH_RETRY_BUDGET}/s, or lower ENRICH_CONCURRENCY; else a fetch waiting its turn runs out of its budget and its batch is retried for ever`,
    });
  if (config.ENRICH && config.ENRICH_TIMEOUT > config.ENRICH_RETRY_BUDGET)
    ctx.addIssue({
      code: 'custom',
      path: ['ENRICH_TIMEOUT'],
      message: `must be at most ENRICH_RETRY_BUDGET (${formatDuration(config.ENRICH_RETRY_BUDGET)})`,
    });
  if (config.PROCESSOR_STATE_STORE === 'lmdb' && config.PROCESSOR_STATE_DIR === undefined)
    ctx.addIssue({
      code: 'custom',
      path: ['PROCESSOR_STATE_DIR'],
      message: 'is required with PROCESSOR_STATE_STORE=lmdb: the directory the state stores live in',
    });
  if (config.PROCESSOR_STANDBY_REPLICAS > 0 && config.PROCESSOR_STATE_STORE !== 'lmdb')
    ctx.addIssue({
      code: 'custom',
      path: ['PROCESSOR_STANDBY_REPLICAS'],
      message:
        'needs PROCESSOR_STATE_STORE=lmdb: a standby keeps its copy in the state directories (in memory a takeover restores in full anyway)',
    });
});

/** `{` and `}` balanced, never closing before opening (string literals aside: a query rarely has any). */
function balancedBraces(query: string): boolean {
  let depth = 0;
  for (const c of query) {
    if (c === '{') depth++;
    else if (c === '}' && --depth < 0) return false;
  }
  return depth === 0;
}

/** `scheme://host[:port]` of an http(s) URL without credentials or path; undefined for anything else. */
function originOf(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return undefined;
  if (url.username !== '' || url.password !== '' || url.pathname !== '/' || url.search !== '')
    return undefined;
  return url.origin;
}

export type Config = z.infer<typeof environment>;

/** The names of the variables above (sources are read by ingest: HOOKLEDGER_SOURCES, HOOKLEDGER_SOURCES_FILE). */
export const CONFIG_VARIABLES: readonly string[] = Object.keys(environment.shape);

/** One thing wrong with the configuration: the variable and what is wrong, never a secret's value. */
export interface ConfigProblem {
  variable: string;
  message: string;
}

/** `VARIABLE: what is wrong (got "value")`, the line the user sees. */
export function problemLine({ variable, message }: ConfigProblem): string {
  return `${variable}: ${message}`;
}

/**
 * Validates the environment: the configuration, or every problem found (not only the first). Secrets may
 * come as `<NAME>_FILE` (see secret-files.ts); their values are never shown.
 */
export function checkConfig(
  env: NodeJS.ProcessEnv = process.env,
): { config: Config; problems: [] } | { config: undefined; problems: ConfigProblem[] } {
  const fileProblems: ConfigProblem[] = [];
  const resolved = resolveSecretFiles(env, undefined, (error) => fileProblems.push(problemOf(error.message)));
  const present = Object.fromEntries(Object.entries(resolved).filter(([, v]) => v !== undefined && v !== ''));
  // With the rules across variables (consistentEnvironment), each reported on the variable to change.
  const result = consistentEnvironment.safeParse(present);
  const problems = [...fileProblems];
  if (!result.success) {
    const seen = new Set(fileProblems.map((p) => p.variable));
    for (const issue of result.error.issues) {
      const variable = String(issue.path[0] ?? 'environment');
      // One line per variable: its first problem (zod may report a bad value twice).
      if (seen.has(variable)) continue;
      seen.add(variable);
      const found = present[variable];
      const secret = (SECRET_VARIABLES as readonly string[]).includes(variable);
      const shown =
        found === undefined
          ? 'it is not set'
          : secret
            ? 'value hidden'
            : `got ${JSON.stringify(withoutPassword(String(found)))}`;
      problems.push({ variable, message: `${issue.message} (${shown})` });
    }
  }
  if (problems.length > 0 || !result.success) return { config: undefined, problems };
  const login = registryLoginApart(result.data);
  if ('problem' in login) return { config: undefined, problems: [login.problem] };
  return { config: login.config, problems: [] };
}

/** A URL's password (`https://user:secret@host`) replaced; anything else as it is. */
export function withoutPassword(text: string): string {
  return text.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/@]*):[^@/]*@/i, '$1:[redacted]@');
}

/**
 * A login written into SCHEMA_REGISTRY_URL (`https://key:secret@host`, as some providers print it) moves
 * to SCHEMA_REGISTRY_USERNAME and _PASSWORD, and the URL keeps no credentials: every message that names
 * the registry by its URL (a start-up check, a command's one line) would otherwise print the secret.
 */
function registryLoginApart(config: Config): { config: Config } | { problem: ConfigProblem } {
  const url = new URL(config.SCHEMA_REGISTRY_URL);
  if (url.username === '' && url.password === '') return { config };
  if (config.SCHEMA_REGISTRY_USERNAME !== undefined || config.SCHEMA_REGISTRY_BEARER_TOKEN !== undefined)
    return {
      problem: {
        variable: 'SCHEMA_REGISTRY_URL',
        message: `holds a login, and SCHEMA_REGISTRY_${config.SCHEMA_REGISTRY_USERNAME !== undefined ? 'USERNAME' : 'BEARER_TOKEN'} is set too: give the login in one place (got ${JSON.stringify(withoutPassword(config.SCHEMA_REGISTRY_URL))})`,
      },
    };
  const username = decodeURIComponent(url.username);
  const password = decodeURIComponent(url.password);
  url.username = '';
  url.password = '';
  return {
    config: {
      ...config,
      SCHEMA_REGISTRY_URL: url.toString().replace(/\/$/, ''),
      SCHEMA_REGISTRY_USERNAME: username,
      SCHEMA_REGISTRY_PASSWORD: password,
    },
  };
}

function problemOf(line: string): ConfigProblem {
  const colon = line.indexOf(': ');
  return colon > 0
    ? { variable: line.slice(0, colon), message: line.slice(colon + 2) }
    : { variable: 'environment', message: line };
}

/**
 * Validates the environment; throws a ConfigError whose message is one line naming the variable (the
 * first problem; `hookledger config check` lists them all).
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const checked = checkConfig(env);
  if (checked.config !== undefined) return checked.config;
  throw new ConfigError(problemLine(checked.problems[0]!));
}

/** Durations among the variables, shown as such (`7d`) by `config print`. */
export const DURATION_VARIABLES: readonly string[] = [
  'DEDUPE_WINDOW',
  'QUARANTINE_RETENTION',
  'INGEST_DEADLINE_MS',
  'INGEST_LINGER_MS',
  'PROCESSOR_SESSION_TIMEOUT_MS',
  'PROCESSOR_TRANSACTION_TIMEOUT_MS',
  'PROCESSOR_COMMIT_INTERVAL_MS',
  'SCHEMA_REGISTRY_TIMEOUT',
  'INGEST_DRAIN_DELAY_MS',
  'INGEST_REQUEST_TIMEOUT_MS',
  'INGEST_KEEP_ALIVE_TIMEOUT_MS',
  'WEBHOOK_MAX_AGE',
  'WEBHOOK_MAX_AHEAD',
  'ENRICH_TIMEOUT',
  'ENRICH_BACKOFF',
  'ENRICH_RETRY_BUDGET',
  'ENRICH_BREAKER_COOLDOWN',
];
