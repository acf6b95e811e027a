// One stream thread of `hookledger process --threads N`: a child process (librdkafka's binding cannot be
// loaded in a worker_thread: confluent-kafka-javascript#258) running the stages with a consumer, a
// transactional producer and tasks of its own (instance id `<instance>-<n>`), and reporting readiness,
// metrics and a stage that stopped to the process that started it (stream-threads.ts), over IPC.
import { collectDefaultMetrics, Registry } from 'prom-client';
import { loadConfig } from '../runtime/config.js';
import { isClusterError } from '../runtime/kafka/admin.js';
import { createLogger } from '../runtime/log.js';
import type { Readiness } from '../runtime/streams/ops-server.js';
import type { RunningStage } from '../runtime/streams/stage.js';
import { STAGES, stageReadiness } from './main.js';
import type { FromThread, StreamThreadData, ToThread } from './stream-thread-protocol.js';

/** How often a thread looks whether its readiness changed (what /readyz of the process shows). */
const READINESS_EVERY_MS = 200;

const post = (message: FromThread) => process.send?.(message);
// Its start: the first message. Ctrl-C reaches the whole process group: the parent decides when to close.
const {
  index,
  instanceId,
  stages: names,
  env,
} = await new Promise<StreamThreadData>((resolve) =>
  process.once('message', (message) => resolve(message as StreamThreadData)),
);
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => {});

const config = loadConfig(env);
const logger = createLogger({ level: config.LOG_LEVEL, name: 'process' }).child({ thread: index });
const registry = new Registry();
// Each thread's process series too: summed with the others' and the parent's, the command's CPU and memory.
collectDefaultMetrics({ register: registry, prefix: 'hookledger_process_' });
const stages: RunningStage[] = [];

async function closeStages(): Promise<void> {
  for (const stage of [...stages].reverse()) await stage.close();
}

/** Readiness is sent again this often even when unchanged: the parent takes silence for a blocked loop. */
const READINESS_REPEAT_MS = 1_000;

let lastReadiness = '';
let lastSentAt = 0;
function reportReadiness(): void {
  const readiness: Record<string, Readiness> = {};
  for (const stage of stages) readiness[stage.name] = stageReadiness(stage.app);
  const text = JSON.stringify(readiness);
  if (text === lastReadiness && Date.now() - lastSentAt < READINESS_REPEAT_MS) return;
  lastReadiness = text;
  lastSentAt = Date.now();
  post({ type: 'readiness', readiness });
}

let closing: Promise<void> | undefined;
function close(): Promise<void> {
  closing ??= closeStages().finally(() => {
    clearInterval(readinessTimer);
    post({ type: 'closed' });
    process.disconnect?.();
  });
  return closing;
}
// The parent gone (SIGKILLed): close, rather than run on as an orphan nobody stops.
process.on('disconnect', () => void close().finally(() => process.exit(0)));
process.on('message', (message: ToThread) => {
  if (message.type === 'metrics') {
    void registry.getMetricsAsJSON().then((metrics) => post({ type: 'metrics', id: message.id, metrics }));
  } else if (message.type === 'close') {
    void close();
  }
});

const readinessTimer = setInterval(reportReadiness, READINESS_EVERY_MS);
try {
  for (const name of names) {
    const start = STAGES[name];
    if (!start) throw new Error(`unknown processor stage "${name}"`);
    stages.push(await start({ config, logger, registry, instanceId }));
  }
} catch (error) {
  await closeStages().catch(() => {});
  clearInterval(readinessTimer);
  const status = (error as { status?: unknown }).status;
  post({
    type: 'start-failed',
    error: {
      message: error instanceof Error ? error.message : String(error),
      ...(typeof status === 'number' ? { status } : {}),
      cluster: isClusterError(error),
    },
  });
  process.disconnect?.();
}
if (stages.length === names.length) {
  reportReadiness();
  post({ type: 'running' });
  void Promise.race(stages.map((stage) => stage.app.stopped.then(() => stage))).then((stage) => {
    if (closing) return;
    const failure = stage.app.failure();
    post({ type: 'stopped', stage: stage.name, ...(failure ? { failure: failure.message } : {}) });
  });
}
