// `hookledger start` keeps the services' JSON log lines in a file under its state folder rather than on
// the terminal; warnings and errors also reach the person, as one short line each (repeats held back).
import { existsSync, mkdirSync, renameSync } from 'node:fs';
import path from 'node:path';
import { pino } from 'pino';
import { createLogger, type Logger } from '../../../runtime/log.js';

export interface StartLog {
  logger: Logger;
  /** The file the lines go to. */
  file: string;
}

export interface StartLogOptions {
  file: string;
  /** LOG_LEVEL: what the file gets. */
  level: string;
  /** A warning or an error, as one short line for the terminal. */
  notify: (line: string) => void;
  /** A message already shown is held back this long (a retry loop warns once, not every second). */
  repeatMs?: number;
  now?: () => number;
}

/** At most this many characters of a notice: it is a pointer into the log file, not the whole story. */
const NOTICE_CHARS = 160;

/** The short line for a JSON log line at warn or above: `warning: <msg>: <reason>`. */
export function noticeText(line: string): { key: string; text: string } | undefined {
  let entry: { level?: unknown; msg?: unknown; reason?: unknown; err?: { message?: unknown } };
  try {
    entry = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof entry.level !== 'number' || typeof entry.msg !== 'string') return undefined;
  const label = entry.level >= 50 ? 'error' : 'warning';
  const why = typeof entry.reason === 'string' ? entry.reason : entry.err?.message;
  const text = `${label}: ${entry.msg}${typeof why === 'string' ? `: ${why}` : ''}`.replace(/\s*\n\s*/g, ' ');
  return {
    key: entry.msg,
    text: text.length > NOTICE_CHARS ? `${text.slice(0, NOTICE_CHARS - 1)}…` : text,
  };
}

/** The stream pino writes warnings and errors to: each message shown once per `repeatMs`. */
export function noticeStream({
  notify,
  repeatMs = 60_000,
  now = Date.now,
}: Pick<StartLogOptions, 'notify' | 'repeatMs' | 'now'>): { write(line: string): void } {
  const shownAt = new Map<string, number>();
  return {
    write(line) {
      const notice = noticeText(line);
      if (notice === undefined) return;
      const last = shownAt.get(notice.key);
      if (last !== undefined && now() - last < repeatMs) return;
      shownAt.set(notice.key, now());
      notify(notice.text);
    },
  };
}

/**
 * Opens the log file (the previous run's is kept as `<file>.1`) and a logger writing to it, with
 * warnings and errors also passed to `notify`. Secrets are redacted as in every hookledger logger.
 */
export function openStartLog({ file, level, notify, repeatMs, now }: StartLogOptions): StartLog {
  mkdirSync(path.dirname(file), { recursive: true });
  if (existsSync(file)) renameSync(file, `${file}.1`);
  // Synchronous writes: nothing is lost when the process exits right after a failure.
  const destination = pino.destination({ dest: file, sync: true });
  const streams = pino.multistream([
    { level: level as pino.Level, stream: destination },
    {
      level: 'warn',
      stream: noticeStream({ notify, ...(repeatMs ? { repeatMs } : {}), ...(now ? { now } : {}) }),
    },
  ]);
  return { logger: createLogger({ level, name: 'hookledger', destination: streams }), file };
}
