// A stream app that survives its clients failing for good while no other instance holds its id.
//
// With static membership, librdkafka fences its own consumer for good (a fatal consumer error, the only
// kind a consumer has) when it rejoins after its group coordinator moved: a broker dying is enough
// (librdkafka #3437). Its transactional producer can fail for good the same way (INVALID_TXN_STATE from
// a coordinator back from a restart mid-transaction). Neither client can be used again, so the app
// stops. Kafka Streams would replace the thread's clients (REPLACE_THREAD); this does the same with a
// whole new app (consumer and producer): its partitions come back through the group, restored from
// their changelogs (right whether the last commit went through or not), and transactions keep
// exactly-once across the swap. Two live instances with one id would fence each other again and
// again: past `allowed` restarts in `windowMs`, the app stops with one line saying so.
//
// The failure that calls for new clients is often a broker going away, and it may still be away when
// the new app starts: a start that fails because the cluster is out of reach is tried again, with a
// back-off, until it succeeds or the app is closed (a Kafka client waits for its brokers the same way).
// Those attempts are one restart, not several.

import { ERRORS } from '../kafka/rdkafka.js';
import type { Logger } from '../log.js';
import {
  isClusterOutOfReach,
  isFailedProducer,
  NewClientsNeededError,
  StreamAppStoppedError,
} from './errors.js';
import { backoffDelay } from './retry.js';
import type { StreamApp, TaskStatus } from './stream-runner.js';

export interface RejoinPolicy {
  /** Restarts allowed within `windowMs`; one more stops the app. */
  allowed: number;
  windowMs: number;
}

export const DEFAULT_REJOIN_POLICY: RejoinPolicy = { allowed: 3, windowMs: 10 * 60_000 };

/** The waits between attempts to start a new app while the cluster is out of reach. */
export interface StartRetryDelays {
  initialMs: number;
  maxMs: number;
}

export const DEFAULT_START_RETRY: StartRetryDelays = { initialMs: 1_000, maxMs: 15_000 };

/** The consumer was fenced (a fatal error on it): a new consumer may rejoin. */
export function isFencedConsumer(error: Error | undefined): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return code === ERRORS.ERR__FATAL || code === ERRORS.ERR_FENCED_INSTANCE_ID;
}

/**
 * A failure that new clients clear: the consumer fenced, the producer failed for good, a commit whose
 * outcome is unknown, a partition that could not be moved back, a stalled loop. The new app restores its
 * state from what was committed, which is right whether a failed commit went through or not (going on
 * with the same state and a new producer would not be).
 */
export function needsNewClients(error: Error | undefined): boolean {
  return isFencedConsumer(error) || isFailedProducer(error) || error instanceof NewClientsNeededError;
}

export async function startRejoiningApp({
  start,
  logger,
  instanceId,
  policy = DEFAULT_REJOIN_POLICY,
  startRetry = DEFAULT_START_RETRY,
  now = Date.now,
}: {
  /** Starts one app (startStreamApp with the stage's options). */
  start: () => Promise<StreamApp>;
  logger: Logger;
  instanceId: string;
  policy?: RejoinPolicy;
  startRetry?: StartRetryDelays;
  now?: () => number;
}): Promise<StreamApp> {
  let current: StreamApp | undefined = await start();
  let closing = false;
  let failure: Error | undefined;
  const restarts: number[] = [];
  /** A new app starting: close() waits for it, so nothing it opens outlives the close. */
  let restarting: Promise<void> | undefined;
  /** Why no app runs while a new one cannot start yet (readiness says it). */
  let waitingFor: string | undefined;
  /** Ends the wait before the next start attempt at once (close() calls it). */
  let wakeUp: (() => void) | undefined;
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      wakeUp = () => {
        clearTimeout(timer);
        resolve();
      };
    }).finally(() => {
      wakeUp = undefined;
    });
  let settle!: () => void;
  const stopped = new Promise<void>((resolve) => {
    settle = resolve;
  });

  /** Watches one app until it stops: rejoins with a new one, or ends for good. */
  const watch = (app: StreamApp): void => {
    void app.stopped.then(async () => {
      const error = app.failure();
      if (closing || error === undefined) return settle();
      const at = now();
      while (restarts.length > 0 && at - restarts[0]! > policy.windowMs) restarts.shift();
      if (!needsNewClients(error)) {
        failure = error;
        return settle();
      }
      if (restarts.length >= policy.allowed) {
        failure = new StreamAppStoppedError(
          isFencedConsumer(error)
            ? `consumer fenced ${restarts.length + 1} times in ${policy.windowMs / 60_000} min: another instance runs with instance id ${instanceId} (${error.message})`
            : `clients replaced ${restarts.length} time${restarts.length === 1 ? '' : 's'} in ${policy.windowMs / 60_000} min and failed again: ${error.message}`,
          { cause: error },
        );
        return settle();
      }
      restarts.push(at);
      logger.warn(
        { err: error.message, restarts: restarts.length },
        isFencedConsumer(error)
          ? 'consumer fenced (its group coordinator moved, or an instance with our id started); rejoining with new clients'
          : error instanceof NewClientsNeededError
            ? `${error.message}; starting again with new clients, state restored from what was committed`
            : 'transactional producer failed for good; starting again with new clients',
      );
      current = undefined;
      restarting = (async () => {
        try {
          const next = await startWhenReachable();
          if (next === undefined) return settle();
          if (closing) {
            await next.close();
            return settle();
          }
          current = next;
          watch(next);
        } catch (startError) {
          failure = startError instanceof Error ? startError : new Error(String(startError));
          settle();
        } finally {
          restarting = undefined;
          waitingFor = undefined;
        }
      })();
    });
  };
  /**
   * A new app, started again after every failure that says the cluster is out of reach (the broker
   * whose going away failed the last app may not be back yet); undefined once closed meanwhile.
   */
  const startWhenReachable = async (): Promise<StreamApp | undefined> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await start();
      } catch (error) {
        if (closing) return undefined;
        if (!isClusterOutOfReach(error)) throw error;
        const delayMs = backoffDelay(attempt, startRetry.initialMs, startRetry.maxMs);
        const reason = error instanceof Error ? error.message : String(error);
        waitingFor = `starting again with new clients, the cluster out of reach (${reason})`;
        logger.warn(
          { err: reason, attempt, retryInMs: delayMs },
          'could not start again with new clients: the cluster is out of reach; trying again',
        );
        await pause(delayMs);
        if (closing) return undefined;
      }
    }
  };
  watch(current);

  return {
    isReady: () => current?.isReady() ?? false,
    readiness: () =>
      current?.readiness() ?? {
        ready: false,
        reasons: [waitingFor ?? 'rejoining the group with new clients'],
      },
    tasks: (): TaskStatus[] => current?.tasks() ?? [],
    stateDiskBytes: () => current?.stateDiskBytes?.(),
    standbyLag: () => current?.standbyLag?.(),
    stopped,
    failure: () => failure,
    async close() {
      closing = true;
      wakeUp?.();
      await current?.close();
      await restarting; // between two apps: the next one is closed as soon as it has started
      settle();
      await stopped;
    },
  };
}
