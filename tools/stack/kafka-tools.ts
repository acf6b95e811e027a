// Kafka's own CLI tools (topics, console-consumer, perf tests, …) run from the cached jars.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Artifacts } from './artifacts.js';
import type { KafkaRelease } from './kafka-versions.js';
import { kafkaToolJvmArgs, logConfigFileName, renderProperties, toolsLogConfig } from './properties.js';

/** Tool name (as in Kafka's bin/kafka-<name>.sh) → main class, checked against the 3.9.1 jars. */
export const KAFKA_TOOLS: Record<string, string> = {
  topics: 'org.apache.kafka.tools.TopicCommand',
  'console-consumer': 'org.apache.kafka.tools.consumer.ConsoleConsumer',
  'console-producer': 'kafka.tools.ConsoleProducer',
  'consumer-groups': 'org.apache.kafka.tools.consumer.group.ConsumerGroupCommand',
  'producer-perf-test': 'org.apache.kafka.tools.ProducerPerformance',
  'consumer-perf-test': 'org.apache.kafka.tools.ConsumerPerformance',
  'get-offsets': 'org.apache.kafka.tools.GetOffsetShell',
  configs: 'kafka.admin.ConfigCommand',
  acls: 'kafka.admin.AclCommand',
};

/** Kafka 4 rewrote some Scala tools in Java, in other packages; checked against the 4.1.2 jars. */
const KAFKA_4_TOOLS: Record<string, string> = {
  'console-producer': 'org.apache.kafka.tools.ConsoleProducer',
  acls: 'org.apache.kafka.tools.AclCommand',
};

/** The main class of `tool` in this Kafka version's jars, or undefined for a tool we do not know. */
export function kafkaToolClass(tool: string, release: Pick<KafkaRelease, 'major'>): string | undefined {
  if (!Object.hasOwn(KAFKA_TOOLS, tool)) return undefined;
  return (release.major >= 4 ? KAFKA_4_TOOLS[tool] : undefined) ?? KAFKA_TOOLS[tool];
}

/** The tools that take `--bootstrap-server`; the perf producer takes `--producer-props` instead. */
const TAKES_BOOTSTRAP_SERVER = new Set([
  'topics',
  'console-consumer',
  'console-producer',
  'consumer-groups',
  'consumer-perf-test',
  'get-offsets',
  'configs',
  'acls',
]);

/**
 * The tool's arguments, with `--bootstrap-server <brokers>` added when the caller gave none and we know
 * the brokers, so `hookledger stack kafka-tool topics --list` just works against the local stack.
 */
export function kafkaToolArgs(tool: string, args: string[], brokers: string[] | undefined): string[] {
  const asksHelp = args.includes('--help') || args.includes('-h') || args.includes('--version');
  if (
    !brokers?.length ||
    asksHelp ||
    !TAKES_BOOTSTRAP_SERVER.has(tool) ||
    args.includes('--bootstrap-server')
  ) {
    return args;
  }
  return ['--bootstrap-server', brokers.join(','), ...args];
}

/** Runs a tool with this terminal's stdin/stdout/stderr; resolves to its exit status. */
export async function runKafkaTool(options: {
  tool: string;
  args: string[];
  artifacts: Artifacts;
  java: string;
  brokers?: string[];
}): Promise<number> {
  const { kafka, kafkaLib } = options.artifacts;
  const mainClass = kafkaToolClass(options.tool, kafka);
  if (!mainClass) throw new Error(`unknown Kafka tool ${options.tool}`);
  // Beside the jars in the cache (one entry per version): tools can run without any state dir.
  const logConfig = join(dirname(kafkaLib), logConfigFileName(kafka.logging, 'tools'));
  if (!existsSync(logConfig)) await writeFile(logConfig, renderProperties(toolsLogConfig(kafka.logging)));
  const child = spawn(
    options.java,
    kafkaToolJvmArgs(
      { logging: kafka.logging, kafkaLib, logConfig },
      mainClass,
      kafkaToolArgs(options.tool, options.args, options.brokers),
    ),
    { stdio: 'inherit' },
  );
  // Ctrl-C reaches the tool through the terminal's process group; we only wait for it to finish.
  const ignore = () => {};
  process.on('SIGINT', ignore);
  try {
    return await new Promise<number>((resolve, reject) => {
      child.once('error', reject);
      child.once('exit', (code, signal) => resolve(code ?? (signal === 'SIGINT' ? 130 : 1)));
    });
  } finally {
    process.off('SIGINT', ignore);
  }
}
