// The ports `hookledger start` listens on, checked before it spends half a minute on a stack.
import { ConfigError } from '../../../runtime/config.js';
import type { ListenTarget } from '../../../runtime/startup-error.js';

/** Ingest and the processors cannot share a port: a ConfigError (one line, exit 2) before either tries. */
export function assertDistinctPorts(a: ListenTarget, b: ListenTarget): void {
  if (a.port !== 0 && a.port === b.port)
    throw new ConfigError(
      `${a.portVariable} and ${b.portVariable} are both ${a.port}: give them different ports`,
    );
}
