// The topic catalog as Strimzi KafkaTopic resources (`hookledger topics --output strimzi`), for teams
// whose topics are managed by the Strimzi Topic Operator rather than created by `hookledger topics`.
import { stringify } from 'yaml';
import { creationValue } from '../../runtime/kafka/topic-spec.js';
import type { CatalogTopic } from '../../schemas/topics.js';

/** Strimzi 0.49 and later (v1beta2 before it, with the same fields). */
export const STRIMZI_API_VERSION = 'kafka.strimzi.io/v1';

const RESOURCE_NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;

/** A topic name as a Kubernetes resource name: lower case, other characters than [-.a-z0-9] as `-`. */
export function resourceName(topic: string): string {
  const name = topic
    .toLowerCase()
    .replace(/[^-a-z0-9.]/g, '-')
    .replace(/^[^a-z0-9]+|[^a-z0-9]+$/g, '');
  return name.slice(0, 253);
}

/** A topic setting as Strimzi's examples write it: numbers and booleans unquoted. */
function configValue(value: string): string | number | boolean {
  if (value === 'true' || value === 'false') return value === 'true';
  return /^-?\d+$/.test(value) && Number.isSafeInteger(Number(value)) ? Number(value) : value;
}

export interface StrimziOptions {
  /** The Kafka resource's name: the `strimzi.io/cluster` label the Topic Operator watches. */
  cluster: string;
  namespace?: string;
}

/** One KafkaTopic per catalog topic, as a multi-document YAML stream. */
export function strimziTopics(
  catalog: readonly CatalogTopic[],
  { cluster, namespace }: StrimziOptions,
): string {
  const docs = catalog.map((topic) => {
    const name = resourceName(topic.name);
    const resource = {
      apiVersion: STRIMZI_API_VERSION,
      kind: 'KafkaTopic',
      metadata: {
        name,
        ...(namespace ? { namespace } : {}),
        labels: { 'strimzi.io/cluster': cluster, 'app.kubernetes.io/part-of': 'hookledger' },
      },
      spec: {
        ...(name === topic.name && RESOURCE_NAME.test(name) ? {} : { topicName: topic.name }),
        partitions: topic.partitions,
        replicas: topic.replicationFactor,
        config: Object.fromEntries(
          Object.entries(topic.configs).map(([setting, expectation]) => [
            setting,
            configValue(creationValue(expectation)),
          ]),
        ),
      },
    };
    return stringify(resource, { lineWidth: 0 });
  });
  const head = [
    '# hookledger topics as Strimzi KafkaTopic resources (`hookledger topics --output strimzi`).',
    '# Partition counts are fixed once created: never raise them here (the Topic Operator would add',
    '# partitions, and retried webhook ids would reach a store that never saw them). To scale past them,',
    '# see docs/scaling.md. Run `hookledger topics` once the topics exist: it verifies them and registers',
    '# the value schemas.',
  ].join('\n');
  return `${head}\n${docs.map((doc) => `---\n${doc}`).join('')}`;
}
