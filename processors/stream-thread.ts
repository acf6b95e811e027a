// One stream thread of `hookledger process --threads N`: a child process (librdkafka's binding cannot be
// loaded in a worker_thread: confluent-kafka-javascript#258) running the stages with a consumer, a
// transactional producer and tasks of its own (instance id `<instance>-<n>`), and reporting readiness,
// metrics and a stage that stopped to the process that started it (stream-threads.ts), over IPC.
import { collectDefaultMetrics, Registry } from 'prom-client';
import { linkToParent } from '../runtime/child-processes.js';
import { loadConfig } from '../runtime/config.js';
import { isClusterError } from '../runtime/kafka/admin.js';
import { createLogger } from '../runtime/log.js';
import type { Readiness } from '../runtime/streams/ops-server.js';
import type { RunningStage } from '../runtime/streams/stage.js';
import { STAGES, stageReadiness } from './main.js';
import type { StreamThreadData } from './stream-thread-protocol.js';

// Its start: the first message.
const {
  index,
  instanceId,
  stages: names,
  env,
} = await new Promise<StreamThreadData>((resolve) =>
  process.once('message', (message) => resolve(message as StreamThreadData)),
);

const config = loadConfig(env);
const logger = createLogger({ level: config.LOG_LEVEL, name: 'process' }).child({ thread: index });
const registry = new Registry();
// Each thread's process series too: summed with the others' and the parent's, the command's CPU and memory.
collectDefaultMetrics({ register: registry, prefix: 'hookledger_process_' });
const stages: RunningStage[] = [];

async function closeStages(): Promise<void> {
  for (const stage of [...stages].reverse()) await stage.close();
}

const parent = linkToParent({
  readiness: () => {
    const readiness: Record<string, Readiness> = {};
    for (const stage of stages) readiness[stage.name] = stageReadiness(stage.app);
    return readiness;
  },
  metrics: () => registry.getMetricsAsJSON(),
  close: closeStages,
});
try {
  for (const name of names) {
    const start = STAGES[name];
    if (!start) throw new Error(`unknown processor stage "${name}"`);
    stages.push(await start({ config, logger, registry, instanceId }));
  }
} catch (error) {
  await closeStages().catch(() => {});
  const status = (error as { status?: unknown }).status;
  parent.startFailed({
    message: error instanceof Error ? error.message : String(error),
    ...(typeof status === 'number' ? { status } : {}),
    cluster: isClusterError(error),
  });
}
if (stages.length === names.length) {
  parent.running();
  void Promise.race(stages.map((stage) => stage.app.stopped.then(() => stage))).then((stage) =>
    parent.stopped(stage.name, stage.app.failure()?.message),
  );
}
