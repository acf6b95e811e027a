// The local Apicurio Registry: a Quarkus JVM storing its schemas in Kafka (KafkaSQL), serving the Confluent API.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Logger } from '../../runtime/log.js';
import type { Artifacts } from './artifacts.js';
import { StackError } from './errors.js';
import {
  launchJvm,
  notReadyError,
  pidIsOurs,
  type RunningJvm,
  readPidFile,
  stopPid,
  waitForPidExit,
} from './jvm-process.js';
import { freePort, portIsFree } from './ports.js';
import { NO_PERF_DATA, type Properties, registrySystemProperties, systemPropertyArgs } from './properties.js';
import { waitForRegistry } from './readiness.js';
import { registryHttpsProperties } from './secure-properties.js';

/** HTTP basic auth for a registry that asks for it (the secured stack's). */
export interface RegistryCredentials {
  username: string;
  password: string;
}

/** HTTPS only (the secured stack's): PEM files for the server, and the CA its readiness check trusts. */
export interface RegistryTls {
  certFile: string;
  keyFile: string;
  caFile: string;
}

export interface RegistryNodeOptions {
  stateDir: string;
  artifacts: Artifacts;
  java: string;
  brokers: string[];
  logger: Logger;
  detached?: boolean;
  readyTimeoutMs?: number;
  /** More system properties (the secured stack's basic auth). */
  extraProperties?: Properties;
  /** The basic-auth user the readiness check logs in as, when the registry asks for one. */
  credentials?: RegistryCredentials;
  /** Serve HTTPS instead of HTTP, on the same port. */
  tls?: RegistryTls;
}

export interface RegistryNode {
  /** The Confluent-compatible API: what SCHEMA_REGISTRY_URL holds. */
  readonly url: string;
  readonly port: number;
  readonly logFile: string;
  pid(): number | undefined;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** SIGKILL, as a crashed machine: connections are refused until `start` (or `restart`). */
  kill(): Promise<void>;
  restart(): Promise<void>;
  /**
   * SIGSTOP: the port still accepts connections (the kernel completes them) and no request is ever
   * answered, as a registry stuck in a pause or a network that drops replies. `thaw` (SIGCONT) wakes it.
   */
  freeze(): void;
  thaw(): void;
}

interface NodeFile {
  port: number;
  managementPort: number;
}

export function registryPaths(stateDir: string) {
  const dir = join(stateDir, 'registry');
  return {
    dir,
    nodeFile: join(dir, 'node.json'),
    pidFile: join(dir, 'registry.pid'),
    logFile: join(stateDir, 'logs', 'registry.log'),
  };
}

export function registryUrl(port: number, { host = '127.0.0.1', https = false } = {}): string {
  return `${https ? 'https' : 'http'}://${host}:${port}/apis/ccompat/v7`;
}

/** The pid of a registry JVM started for this state directory, if it still runs. */
export function runningRegistryPid(stateDir: string): number | undefined {
  const paths = registryPaths(stateDir);
  const pid = readPidFile(paths.pidFile);
  // Its command line carries the state dir through java.io.tmpdir.
  return pid !== undefined && pidIsOurs(pid, paths.dir) ? pid : undefined;
}

export async function createRegistryNode(options: RegistryNodeOptions): Promise<RegistryNode> {
  const { stateDir, artifacts, java, brokers, logger } = options;
  const paths = registryPaths(stateDir);
  const tmp = join(paths.dir, 'tmp');
  await mkdir(tmp, { recursive: true });
  const node = await choosePorts(paths.nodeFile, runningRegistryPid(stateDir) !== undefined);
  await writeFile(paths.nodeFile, `${JSON.stringify(node, null, 2)}\n`);
  const url = registryUrl(node.port, { https: options.tls !== undefined });
  const log = logger.child({ component: 'stack.registry' });
  let jvm: RunningJvm | undefined;

  const self: RegistryNode = {
    url,
    port: node.port,
    logFile: paths.logFile,
    pid: () => (jvm && !jvm.hasExited() ? jvm.pid : runningRegistryPid(stateDir)),
    async start() {
      if (self.pid() !== undefined) return;
      const started = Date.now();
      // How its readiness check reaches it; the CA is read first, so a missing file starts no JVM.
      const access = {
        registryUrl: url,
        ...(options.credentials ? { auth: options.credentials } : {}),
        ...(options.tls ? { ca: await readFile(options.tls.caFile) } : {}),
      };
      const properties = {
        ...registrySystemProperties({ port: node.port, managementPort: node.managementPort, brokers }),
        ...(options.tls ? registryHttpsProperties(node.port, options.tls) : {}),
        ...options.extraProperties,
      };
      jvm = await launchJvm({
        name: 'the schema registry',
        command: java,
        args: [
          '-Xms128m',
          '-Xmx512m',
          // On no hot path here: C1 alone is enough, and means less JIT work while it starts beside Kafka.
          '-XX:TieredStopAtLevel=1',
          NO_PERF_DATA,
          `-Djava.io.tmpdir=${tmp}`,
          ...systemPropertyArgs(properties),
          '-jar',
          artifacts.registryJar,
        ],
        cwd: dirname(artifacts.registryJar),
        logFile: paths.logFile,
        pidFile: paths.pidFile,
        detached: options.detached ?? false,
      });
      const outcome = await waitForRegistry(access, {
        timeoutMs: options.readyTimeoutMs ?? 120_000,
        exited: jvm.exited,
      });
      if (outcome !== 'ready') {
        const running = jvm;
        jvm = undefined;
        throw await notReadyError(running, outcome, `the schema registry at ${url}`, paths.logFile);
      }
      log.info({ url, pid: jvm.pid, ms: Date.now() - started }, 'schema registry ready');
    },
    async stop() {
      const running = jvm;
      jvm = undefined;
      // A frozen JVM would only take the SIGTERM once woken: a clean shutdown, not the SIGKILL after 15 s.
      const pid = self.pid() ?? running?.pid;
      if (pid !== undefined) signal(pid, 'SIGCONT');
      if (running && !running.hasExited()) await running.stop();
      // The one this process started is gone (killed, say) and another may run in its place: one
      // `stack restart registry` started from another process. The pid file names it.
      const other = runningRegistryPid(stateDir);
      if (other !== undefined) await stopPid(other);
    },
    async kill() {
      const pid = self.pid();
      jvm = undefined;
      if (pid === undefined) return;
      signal(pid, 'SIGKILL');
      await waitForPidExit(pid, 10_000);
      log.info({ url, pid }, 'schema registry killed');
    },
    async restart() {
      await self.stop();
      await self.start();
    },
    freeze() {
      const pid = self.pid();
      if (pid === undefined) throw new StackError(`the schema registry at ${url} is not running`);
      signal(pid, 'SIGSTOP');
      log.info({ url, pid }, 'schema registry frozen');
    },
    thaw() {
      const pid = self.pid();
      if (pid === undefined) throw new StackError(`the schema registry at ${url} is not running`);
      signal(pid, 'SIGCONT');
      log.info({ url, pid }, 'schema registry thawed');
    },
  };
  return self;
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // Gone already: nothing to stop, kill or wake.
  }
}

async function choosePorts(nodeFile: string, running: boolean): Promise<NodeFile> {
  try {
    const previous = JSON.parse(await readFile(nodeFile, 'utf8')) as NodeFile;
    if (running || ((await portIsFree(previous.port)) && (await portIsFree(previous.managementPort))))
      return previous;
  } catch {}
  const port = await freePort();
  let managementPort = await freePort();
  while (managementPort === port) managementPort = await freePort();
  return { port, managementPort };
}
