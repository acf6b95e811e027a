// How a log line shows an error: a retriable or expected one (a broker away, a timeout, a refused
// request) as its code and message on one line; a bug (TypeError, …) with its stack, to be fixed.
import { isProgrammerError } from './streams/retry.js';

/** The fields a log line carries for `error`: `{ err }` (with its stack) for a bug, else `{ code, reason }`. */
export function errorFields(error: unknown): { err: unknown } | { code?: string | number; reason: string } {
  if (isProgrammerError(error)) return { err: error };
  const code = (error as { code?: unknown } | undefined)?.code;
  const reason = error instanceof Error ? error.message : String(error);
  return typeof code === 'string' || typeof code === 'number' ? { code, reason } : { reason };
}
