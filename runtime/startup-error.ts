// Start-up failures a person can act on (an address in use, a broker or registry out of reach): the
// CLI prints their message as one line and exits 1, and whoever started something closes it first.
import { createServer } from 'node:net';

export class StartupError extends Error {
  override name = 'StartupError';
  /** tools/cli/run-cli.ts prints errors carrying this flag as one line, without a stack trace. */
  readonly userFacing = true;
}

/** Where a server was asked to listen, and which variables (or options) chose it. */
export interface ListenTarget {
  host: string;
  port: number;
  hostVariable: string;
  portVariable: string;
}

/**
 * listen()'s refusals as one line naming the port or host and the variable that set it; any other
 * error is returned as it is (a bug keeps its stack).
 */
export function listenFailure(error: unknown, target: ListenTarget): unknown {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const { host, port, hostVariable, portVariable } = target;
  switch (code) {
    case 'EADDRINUSE':
      return new StartupError(`port ${port} is in use (${portVariable})`, { cause: error });
    case 'EACCES':
      return new StartupError(`port ${port} needs privileges this user does not have (${portVariable})`, {
        cause: error,
      });
    case 'EADDRNOTAVAIL':
      return new StartupError(`${host} is not an address of this machine (${hostVariable})`, {
        cause: error,
      });
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return new StartupError(`host ${host} cannot be resolved (${hostVariable})`, { cause: error });
    default:
      return error;
  }
}

/**
 * Runs start-up checks side by side and throws the failure of the first in the order given (Kafka
 * before the registry: when both are down, the stack is, and Kafka says it best).
 */
export async function checkAll(checks: readonly Promise<void>[]): Promise<void> {
  const results = await Promise.allSettled(checks);
  for (const result of results) if (result.status === 'rejected') throw result.reason;
}

/**
 * Listens on the address for a moment and lets go: throws the StartupError listen() would give, before
 * any client is started (the service still reports a port taken later, by the same line).
 */
export function assertPortFree(target: ListenTarget): Promise<void> {
  // Port 0 asks the system for any free port: nothing to check.
  if (target.port === 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', (error) => reject(listenFailure(error, target)));
    server.listen({ host: target.host, port: target.port, exclusive: true }, () =>
      server.close(() => resolve()),
    );
  });
}
