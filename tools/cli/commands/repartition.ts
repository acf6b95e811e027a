// `hookledger repartition`: copies webhooks.raw into a new topic set with another partition count.
import { RepartitionError, runRepartition } from '../../repartition/repartition.js';
import { clusterConfig } from '../cluster-config.js';
import {
  CONNECTION_HELP,
  type Command,
  CommandFailed,
  clusterFailure,
  parseOptions,
  stderrLogger,
  UsageError,
} from '../command.js';
import { STACK_ENV_HELP } from '../stack-env.js';

const HELP = `usage: hookledger repartition --to-prefix <prefix> [--follow]

Copies webhooks.raw (of TOPIC_PREFIX) into <prefix>webhooks.raw, a new topic set with more partitions
made first with \`TOPIC_PREFIX=<prefix> hookledger topics --partitions <n>\`: every record exactly once,
with its key, timestamp and headers, placed by its key as ingest places it in the new set. Partitions
are never added to a live topic (a retried webhook id would reach a store that never saw it); this,
then a replay under the new prefix and \`replay diff --live-prefix\`, is the way to more (docs/scaling.md).

Stops once it has copied what webhooks.raw held when it started; running it again goes on from there.

options:
  --to-prefix <prefix>  the new topic set's TOPIC_PREFIX (e.g. v2.)
  --follow              keep copying new deliveries until Ctrl-C / SIGTERM (until ingest writes the new set)
  -h, --help            this text

environment: KAFKA_BROKERS, TOPIC_PREFIX, PROCESSOR_TRANSACTION_TIMEOUT_MS, LOG_LEVEL

${CONNECTION_HELP}

${STACK_ENV_HELP}`;

export const command: Command = {
  help: HELP,
  async run(args) {
    const { values } = parseOptions(args, {
      'to-prefix': { type: 'string' },
      follow: { type: 'boolean', default: false },
    });
    const toPrefix = values['to-prefix'];
    if (toPrefix === undefined) throw new UsageError('--to-prefix <prefix of the new topic set> is required');
    const config = await clusterConfig(process.env, { registry: false });
    const logger = stderrLogger(config.LOG_LEVEL, 'repartition');
    const stop = new AbortController();
    const abort = () => stop.abort();
    process.once('SIGINT', abort);
    process.once('SIGTERM', abort);
    let shown = '';
    try {
      const result = await runRepartition({
        config,
        logger,
        toPrefix,
        follow: values.follow ?? false,
        signal: stop.signal,
        onProgress: ({ copied, total }) => {
          const line = `copied ${copied} of ${total}`;
          if (line !== shown) process.stderr.write(`${line}\n`);
          shown = line;
        },
      });
      console.log(
        `${result.caughtUp ? 'copied' : 'stopped while copying'} ${result.from.topic} (${result.from.partitions} partitions) into ${result.to.topic} (${result.to.partitions} partitions)` +
          (result.caughtUp ? '' : ': run it again to go on'),
      );
      return result.caughtUp ? 0 : 1;
    } catch (error) {
      if (error instanceof RepartitionError) throw new CommandFailed(error.message);
      throw clusterFailure(error, config.KAFKA_BROKERS) ?? error;
    } finally {
      process.off('SIGINT', abort);
      process.off('SIGTERM', abort);
    }
  },
};
