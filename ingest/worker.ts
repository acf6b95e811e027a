// One HTTP worker of `hookledger ingest --workers N`: a cluster worker (node:cluster shares INGEST_PORT
// between the workers) with a producer of its own, reporting readiness and metrics to the command
// (workers.ts), which checked everything before it started and serves the ops port for all of them.
import { linkToParent } from '../runtime/child-processes.js';
import { loadConfig } from '../runtime/config.js';
import { isClusterError } from '../runtime/kafka/admin.js';
import { createLogger } from '../runtime/log.js';
import { type RunningIngestServer, startIngestServer } from './main.js';
import { loadSources } from './sources.js';
import type { FailingIdEvent } from './webhooks/failing-id-telemetry.js';
import { type IngestWorkerData, WORKER_DATA_VARIABLE, workerConfig } from './workers.js';

const env = process.env;
const { index, keepRefused } = JSON.parse(env[WORKER_DATA_VARIABLE] ?? '{}') as IngestWorkerData;
const config = workerConfig(loadConfig(env));
const logger = createLogger({ level: config.LOG_LEVEL, name: 'ingest' }).child({ worker: index });

let running: RunningIngestServer | undefined;
let closing = false;
const peerListeners: ((event: FailingIdEvent) => void)[] = [];
const parent = linkToParent({
  readiness: () => ({
    webhooks: { ready: running !== undefined && !closing },
    producer: { ready: running?.producer.ready ?? false },
    schema: { ready: running?.encoder.ready ?? false },
  }),
  metrics: async () => (running ? running.metrics.registry.getMetricsAsJSON() : []),
  close: async () => {
    closing = true;
    await running?.close();
  },
  fromPeer: (event) => {
    for (const listener of peerListeners) listener(event as FailingIdEvent);
  },
});
try {
  running = await startIngestServer({
    config,
    sources: loadSources(env),
    logger,
    keepRefused,
    ops: false,
    failingIdPeers: {
      tell: (event) => parent.toPeers(event),
      listen: (listener) => peerListeners.push(listener),
    },
  });
  parent.running();
} catch (error) {
  parent.startFailed({
    message: error instanceof Error ? error.message : String(error),
    cluster: isClusterError(error),
  });
}
