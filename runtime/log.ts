// The one logger factory: pino, JSON lines, secrets redacted wherever they appear.
import { type DestinationStream, type Logger, type LoggerOptions, pino } from 'pino';

export type { Logger };

/** Paths that may carry a secret; pino replaces their values before a line is written. */
const REDACTED = [
  'keys',
  '*.keys',
  '*.*.keys',
  'key',
  '*.key',
  'headers["x-signature"]',
  'req.headers["x-signature"]',
  'body',
  '*.body',
];

export function createLogger(
  options: {
    level?: string;
    name?: string;
    /** Where the lines go (default stdout): `hookledger start` writes them to a file. */
    destination?: DestinationStream;
  } = {},
): Logger {
  const config: LoggerOptions = {
    level: options.level ?? 'info',
    redact: { paths: REDACTED, censor: '[redacted]' },
    base: { name: options.name ?? 'hookledger' },
  };
  return options.destination ? pino(config, options.destination) : pino(config);
}
