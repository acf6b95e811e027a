// The secured stack's token endpoint (token-endpoint-main.ts) as one of the stack's processes: started
// and stopped like the JVMs (launchJvm: supervised, or detached for `stack up`), found again by its pid file.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../../runtime/log.js';
import { StackError } from './errors.js';
import { launchJvm, notReadyError, pidIsOurs, type RunningJvm, readPidFile, stopPid } from './jvm-process.js';
import { portIsFree } from './ports.js';
import type { TokenEndpointOptions } from './token-endpoint.js';

// From a checkout the sources run through tsx's loader, found from hookledger's own directory (the
// child's cwd); the production build runs the compiled file as it is.
const compiled = import.meta.url.endsWith('.js');
const MAIN = fileURLToPath(new URL(`./token-endpoint-main.${compiled ? 'js' : 'ts'}`, import.meta.url));
const LOADER = compiled ? [] : ['--import', 'tsx'];
const PACKAGE_ROOT = fileURLToPath(new URL('../..', import.meta.url));

export function tokenEndpointPaths(stateDir: string) {
  const dir = join(stateDir, 'secure');
  return {
    /** Its options, signing key included: mode 600. */
    configFile: join(dir, 'token-endpoint.json'),
    pidFile: join(dir, 'token-endpoint.pid'),
    logFile: join(stateDir, 'logs', 'token-endpoint.log'),
  };
}

/** The pid of the token endpoint started for this state directory, if it still runs. */
export function runningTokenEndpointPid(stateDir: string): number | undefined {
  const paths = tokenEndpointPaths(stateDir);
  const pid = readPidFile(paths.pidFile);
  return pid !== undefined && pidIsOurs(pid, paths.configFile) ? pid : undefined;
}

export interface TokenEndpointNode {
  /** What KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL holds. */
  readonly url: string;
  readonly logFile: string;
  pid(): number | undefined;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** Whether the endpoint behind a token URL (`…/token`) answers: GET /jwks beside it. */
export async function tokenEndpointAnswers(tokenUrl: string): Promise<boolean> {
  try {
    const response = await fetch(new URL('jwks', tokenUrl), { signal: AbortSignal.timeout(1_000) });
    await response.body?.cancel();
    return response.ok;
  } catch {
    return false;
  }
}

export function createTokenEndpointNode(options: {
  stateDir: string;
  endpoint: TokenEndpointOptions & { host: string; port: number };
  logger: Logger;
  detached: boolean;
  readyTimeoutMs?: number;
}): TokenEndpointNode {
  const { stateDir, endpoint, logger, detached } = options;
  const paths = tokenEndpointPaths(stateDir);
  const base = `http://${endpoint.host}:${endpoint.port}`;
  let process_: RunningJvm | undefined;
  const self: TokenEndpointNode = {
    url: `${base}/token`,
    logFile: paths.logFile,
    pid: () => (process_ && !process_.hasExited() ? process_.pid : runningTokenEndpointPid(stateDir)),
    async start() {
      if (self.pid() !== undefined) return;
      if (!(await portIsFree(endpoint.port)))
        throw new StackError(
          `the token endpoint cannot start: port ${endpoint.port} is taken by another process (state: ${stateDir})`,
        );
      await writeFile(paths.configFile, `${JSON.stringify(endpoint)}\n`, { mode: 0o600 });
      const started = Date.now();
      process_ = await launchJvm({
        name: 'the token endpoint',
        command: process.execPath,
        args: [...LOADER, MAIN, paths.configFile],
        cwd: PACKAGE_ROOT,
        logFile: paths.logFile,
        pidFile: paths.pidFile,
        detached,
        graceMs: 5_000,
      });
      const deadline = Date.now() + (options.readyTimeoutMs ?? 30_000);
      while (!(await tokenEndpointAnswers(self.url))) {
        if (process_.hasExited() || Date.now() > deadline) {
          const running = process_;
          process_ = undefined;
          throw await notReadyError(
            running,
            running.hasExited() ? 'exited' : 'timeout',
            `the token endpoint at ${base}`,
            paths.logFile,
          );
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      logger
        .child({ component: 'stack.token-endpoint' })
        .info({ url: self.url, pid: process_.pid, ms: Date.now() - started }, 'token endpoint ready');
    },
    async stop() {
      if (process_) {
        const running = process_;
        process_ = undefined;
        await running.stop();
      } else {
        const pid = runningTokenEndpointPid(stateDir);
        if (pid !== undefined) await stopPid(pid, 5_000);
      }
    },
  };
  return self;
}
