// The start-up check that Kafka can be reached, so a wrong or stopped cluster is one line within
// seconds rather than a client that retries in the background: a TCP connection to each bootstrap
// address (a refusal shows at once). What a reachable broker then says (TLS, SASL) is the clients'
// to report: they name the failure more precisely than a timeout here could.
import { connect } from 'node:net';
import { StartupError } from '../startup-error.js';

export interface ReachOptions {
  /** Each step's bound: a connection that neither opens nor fails by then counts as unreachable. */
  timeoutMs?: number;
  /** What set the brokers, for the message. */
  variable?: string;
}

const REASONS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host not found',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ETIMEDOUT: 'timed out',
  ECONNRESET: 'connection reset',
};

/** Why a TCP connection to `host:port` cannot be opened, or undefined once one opens. */
export function tcpProblem(address: string, timeoutMs: number): Promise<string | undefined> {
  const colon = address.lastIndexOf(':');
  const host = address.slice(0, colon);
  const port = Number(address.slice(colon + 1));
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (problem: string | undefined) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(problem);
    };
    const timer = setTimeout(() => done(`no answer within ${timeoutMs / 1000} s`), timeoutMs);
    socket.once('connect', () => done(undefined));
    socket.once('error', (error: NodeJS.ErrnoException) =>
      done(REASONS[error.code ?? ''] ?? error.code ?? error.message),
    );
  });
}

/** Resolves once a bootstrap broker accepts a connection; throws a one-line StartupError otherwise. */
export async function assertBrokersReachable(
  brokers: readonly string[],
  { timeoutMs = 5_000, variable = 'KAFKA_BROKERS' }: ReachOptions = {},
): Promise<void> {
  const where = brokers.join(',');
  const problems = await Promise.all(brokers.map((broker) => tcpProblem(broker, timeoutMs)));
  if (problems.every((problem) => problem !== undefined)) {
    const reason =
      problems.length === 1 ? problems[0] : brokers.map((broker, i) => `${broker} ${problems[i]}`).join(', ');
    throw new StartupError(`Kafka at ${where} cannot be reached: ${reason} (${variable})`);
  }
}
