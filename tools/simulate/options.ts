// `hookledger simulate`'s arguments, turned into a SimulationOptions (or one UsageError line).
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parseDuration } from '../../runtime/duration.js';
import { parseOptions, UsageError } from '../cli/command.js';
import { BoundsError, parseTime } from '../replay/bounds.js';
import { DEFAULT_OTHER_TRIGGERS } from './deliveries.js';
import { DEFAULT_API_PORT } from './graphql-api.js';
import { DEFAULT_RETRY_POLICY } from './retry-schedule.js';
import type { SimulationOptions } from './simulation.js';

export const DEFAULT_RATE_PER_SECOND = 10;
export const DEFAULT_CONCURRENCY = 8;
/** §8's limits: the response time a receiver is given, and how long a failed delivery is retried. */
const PLATFORM_TIMEOUT = '30s';
const PLATFORM_RETRY_WINDOW = '72h';
/** Mean time between two triggers' dates when the rate is unlimited. */
const UNLIMITED_GAP_MS = 1_500;

export const SIMULATE_OPTIONS = {
  url: { type: 'string' },
  source: { type: 'string' },
  key: { type: 'string' },
  'key-file': { type: 'string' },
  unsigned: { type: 'boolean', default: false },
  count: { type: 'string' },
  rate: { type: 'string' },
  timeout: { type: 'string', default: PLATFORM_TIMEOUT },
  'retry-window': { type: 'string', default: PLATFORM_RETRY_WINDOW },
  backoff: { type: 'string', default: '1s' },
  'max-backoff': { type: 'string', default: '1h' },
  seed: { type: 'string' },
  start: { type: 'string' },
  'duplicate-rate': { type: 'string', default: '0' },
  'reorder-rate': { type: 'string', default: '0' },
  'failure-rate': { type: 'string', default: '0.02' },
  'invalid-rate': { type: 'string', default: '0' },
  'other-triggers': { type: 'string', default: DEFAULT_OTHER_TRIGGERS.join(',') },
  concurrency: { type: 'string', default: String(DEFAULT_CONCURRENCY) },
  json: { type: 'boolean', default: false },
  'ids-file': { type: 'string' },
  'minimal-rate': { type: 'string' },
  'api-port': { type: 'string', default: String(DEFAULT_API_PORT) },
  'api-failure-rate': { type: 'string', default: '0' },
  'api-linger': { type: 'string', default: '10s' },
} as const;

/** The platform's GraphQL API played locally (graphql-api.ts), when `--minimal-rate` asks for it. */
export interface SimulatedApiOptions {
  port: number;
  failureRate: number;
  /** After the last webhook, it keeps answering until no request came for this long. */
  lingerMs: number;
}

export interface SimulateCommandOptions {
  simulation: SimulationOptions;
  json: boolean;
  idsFile?: string;
  api?: SimulatedApiOptions;
}

function duration(flag: string, text: string): number {
  const ms = parseDuration(text);
  if (ms === undefined || ms <= 0)
    throw new UsageError(`${flag}: expected a duration such as 30s, 250ms or 72h, got "${text}"`);
  return ms;
}

/**
 * A duration no longer than the platform's: §8 gives the receiver 30 s ("a lower timeout can be
 * configured") and retries for 72 h. Shorter values compress a run; longer ones would accept what the
 * platform fails.
 */
function atMostPlatform(flag: string, text: string, limit: string, what: string): number {
  const ms = duration(flag, text);
  if (ms > duration(flag, limit))
    throw new UsageError(`${flag}: at most ${limit} (the platform's ${what}), got "${text}"`);
  return ms;
}

function share(flag: string, text: string): number {
  const value = Number(text);
  if (text.trim() === '' || !Number.isFinite(value) || value < 0 || value > 1)
    throw new UsageError(`${flag}: expected a number from 0 to 1, got "${text}"`);
  return value;
}

function port(flag: string, text: string): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 0 || value > 65_535)
    throw new UsageError(`${flag}: expected a port number, got "${text}"`);
  return value;
}

function positiveInteger(flag: string, text: string): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1)
    throw new UsageError(`${flag}: expected a positive integer, got "${text}"`);
  return value;
}

/** Operator-enabled trigger names: Entity + Action in CamelCase, e.g. PaymentAdded. */
function triggerList(text: string): string[] {
  const triggers = text
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t !== '');
  const bad = triggers.find((t) => !/^[A-Z][a-z0-9]*(?:[A-Z][a-z0-9]*)+$/.test(t));
  if (bad !== undefined)
    throw new UsageError(
      `--other-triggers: expected CamelCase trigger names such as PaymentAdded, got "${bad}"`,
    );
  return triggers;
}

/** `10`, `10/s`, `600/m` or `unlimited`: first attempts per second (undefined for unlimited). */
export function parseRate(text: string): number | undefined {
  if (text === 'unlimited') return undefined;
  const match = /^(\d+(?:\.\d+)?)(?:\/(s|m|h))?$/.exec(text.trim());
  const amount = match ? Number(match[1]) : Number.NaN;
  if (!match || !(amount > 0))
    throw new UsageError(`--rate: expected N/s, N/m, N/h or unlimited, got "${text}"`);
  return amount / { s: 1, m: 60, h: 3600 }[(match[2] ?? 's') as 's' | 'm' | 'h'];
}

function signingKey(
  values: { key?: string; 'key-file'?: string; unsigned?: boolean },
  env: NodeJS.ProcessEnv,
) {
  const given = [values.key !== undefined, values['key-file'] !== undefined, values.unsigned === true];
  if (given.filter(Boolean).length > 1)
    throw new UsageError('give only one of --key, --key-file and --unsigned');
  if (values.unsigned) return undefined;
  if (values.key !== undefined) {
    if (values.key === '') throw new UsageError('--key: the key is empty');
    return values.key;
  }
  if (values['key-file'] !== undefined) {
    let text: string;
    try {
      text = readFileSync(values['key-file'], 'utf8');
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
      throw new UsageError(`--key-file: cannot read ${JSON.stringify(values['key-file'])} (${code})`);
    }
    // A file written by `echo` ends with a newline that is not part of the key.
    const key = text.replace(/\r?\n$/, '');
    if (key === '') throw new UsageError(`--key-file: ${JSON.stringify(values['key-file'])} is empty`);
    return key;
  }
  const fromEnv = env.HOOKLEDGER_SIMULATE_KEY;
  if (fromEnv) return fromEnv;
  throw new UsageError(
    'no signing key: give --key, --key-file or HOOKLEDGER_SIMULATE_KEY (or --unsigned for a source declared "signature": "none")',
  );
}

export function parseSimulateArgs(
  args: string[],
  env: NodeJS.ProcessEnv,
  now = Date.now(),
): SimulateCommandOptions {
  const { values } = parseOptions(args, SIMULATE_OPTIONS);
  const source = values.source;
  if (source !== undefined && !/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(source))
    throw new UsageError(
      `--source: expected a source name (letters, digits, ".", "_", "-"), got "${source}"`,
    );
  if (values.url === undefined && source === undefined)
    throw new UsageError('give --source <name> (posting to http://127.0.0.1:8080/webhooks/<name>) or --url');
  const url = values.url ?? `http://127.0.0.1:8080/webhooks/${source}`;
  try {
    const parsed = new URL(url);
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error('not http(s)');
  } catch {
    throw new UsageError(`--url: expected an http(s) URL, got "${url}"`);
  }
  const ratePerSecond = parseRate(values.rate ?? String(DEFAULT_RATE_PER_SECOND));
  const count = values.count === undefined ? undefined : positiveInteger('--count', values.count);
  // The triggers fire as fast as they are sent, so `webhook.date` keeps pace with the clock the
  // receiver stamps: the router dead-letters a date more than minutes ahead (from-the-future).
  const meanGapMs = ratePerSecond === undefined ? UNLIMITED_GAP_MS : 1_000 / ratePerSecond;
  // As fast as possible: the dates end now rather than run ahead of it.
  let start = ratePerSecond === undefined ? now - (count ?? 0) * UNLIMITED_GAP_MS : now;
  // Dated from now, a webhook is never dated after it is made; a --start given is kept as asked.
  let notAfter: (() => number) | undefined = Date.now;
  if (values.start !== undefined) {
    notAfter = undefined;
    // With a zone, as --from elsewhere: Date.parse takes "1" (2001) and reads a zone-less time as local,
    // so the same --seed and --start would give other bytes on another machine.
    try {
      start = parseTime('--start', values.start);
    } catch (error) {
      if (!(error instanceof BoundsError)) throw error;
      throw new UsageError(
        `--start: expected an ISO 8601 date-time with a zone (2026-11-01T09:00:00Z, 2026-11-01T10:00:00+01:00) or a date (2026-11-01, UTC midnight), got "${values.start}"`,
      );
    }
  }
  const windowMs = atMostPlatform(
    '--retry-window',
    values['retry-window'],
    PLATFORM_RETRY_WINDOW,
    'retry window',
  );
  const invalidRate = share('--invalid-rate', values['invalid-rate']);
  const failureRate = share('--failure-rate', values['failure-rate']);
  // A webhook is one or the other (or neither): the two shares come out of the same webhooks.
  if (invalidRate + failureRate > 1)
    throw new UsageError(
      `--invalid-rate and --failure-rate: together at most 1, got ${invalidRate} + ${failureRate}`,
    );
  const key = signingKey(values, env);
  const minimalRate =
    values['minimal-rate'] === undefined ? undefined : share('--minimal-rate', values['minimal-rate']);
  const api: SimulatedApiOptions | undefined =
    minimalRate === undefined
      ? undefined
      : {
          port: port('--api-port', values['api-port']),
          failureRate: share('--api-failure-rate', values['api-failure-rate']),
          lingerMs: duration('--api-linger', values['api-linger']),
        };
  return {
    simulation: {
      url,
      ...(key === undefined ? {} : { key }),
      ...(count === undefined ? {} : { count }),
      ratePerSecond,
      timeoutMs: atMostPlatform('--timeout', values.timeout, PLATFORM_TIMEOUT, 'response time'),
      policy: {
        ...DEFAULT_RETRY_POLICY,
        initialMs: duration('--backoff', values.backoff),
        maxMs: duration('--max-backoff', values['max-backoff']),
        windowMs,
      },
      seed: values.seed ?? randomBytes(4).toString('hex'),
      start,
      duplicateRate: share('--duplicate-rate', values['duplicate-rate']),
      reorderRate: share('--reorder-rate', values['reorder-rate']),
      invalidRate,
      failureRate,
      concurrency: positiveInteger('--concurrency', values.concurrency),
      generator: {
        otherTriggers: triggerList(values['other-triggers']),
        meanGapMs,
        ...(notAfter === undefined ? {} : { notAfter }),
        ...(minimalRate === undefined ? {} : { minimalRate }),
      },
    },
    json: values.json,
    ...(api === undefined ? {} : { api }),
    ...(values['ids-file'] === undefined ? {} : { idsFile: values['ids-file'] }),
  };
}
