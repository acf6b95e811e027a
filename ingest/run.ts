// The `hookledger ingest` process: config → start (one server, or INGEST_WORKERS workers) → run until
// SIGTERM or SIGINT → drain, then close gracefully.
import { loadConfig } from '../runtime/config.js';
import { logStartConfig } from '../runtime/config-view.js';
import { exitProcess } from '../runtime/exit.js';
import { createLogger } from '../runtime/log.js';
import { startIngest } from './main.js';
import { loadSources } from './sources.js';
import { startIngestWorkers } from './workers.js';

/** Runs until SIGTERM or SIGINT (or, with workers, until one ends unasked), then closes; the exit code. */
export async function runIngest(env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const config = loadConfig(env);
  const sources = loadSources(env);
  const logger = createLogger({ level: config.LOG_LEVEL, name: 'ingest' });
  logStartConfig(logger, config, env);
  const running =
    config.INGEST_WORKERS > 1
      ? await startIngestWorkers({ config, env, sources, logger })
      : { ...(await startIngest({ config, sources, logger })), stopped: new Promise<never>(() => {}) };
  const ended = await new Promise<NodeJS.Signals | { failure?: string }>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
    void running.stopped.then(resolve);
  });
  if (typeof ended === 'object') {
    // A worker ended by itself: the others are closed at once (no drain: this instance is broken).
    logger.error({ reason: ended.failure }, 'an ingest worker ended; stopping');
    await running.close();
    return 1;
  }
  logger.info({ signal: ended }, 'shutting down');
  // Bounded: the drain by its delay, in-flight requests by their deadline, the queue's flush by the send timeout.
  const force = setTimeout(
    () => {
      logger.error('graceful shutdown took too long; exiting');
      exitProcess(1);
    },
    config.INGEST_DRAIN_DELAY_MS + 2 * config.INGEST_DEADLINE_MS + 5_000,
  );
  force.unref();
  // A second signal skips the rest of the drain (an operator's Ctrl-C twice).
  await Promise.race([
    running.drain(),
    new Promise<void>((resolve) => {
      process.once('SIGTERM', resolve);
      process.once('SIGINT', resolve);
    }),
  ]);
  await running.close();
  clearTimeout(force);
  return 0;
}
