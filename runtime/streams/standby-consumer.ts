// The standby follower's consumer on librdkafka: group-less (assign only, the library's reader group id
// is never joined), read_committed, nothing committed or stored; changelog bounds asked of an admin client
// (read_uncommitted: the high watermark, as a restore reads to).
import {
  call,
  connect,
  createConsumer,
  disconnect,
  type KafkaSettings,
  type RdConsumer,
} from '../kafka/rdkafka.js';
import { createTopicAdmin } from '../kafka/rdkafka-admin.js';
import { readerGroupId } from '../kafka/resource-ids.js';
import type { StandbyConsumer } from './standby-follower.js';
import type { ConsumedMessage } from './stream-clients.js';

export async function librdkafkaStandbyConsumer(settings: KafkaSettings): Promise<StandbyConsumer> {
  const raw = createConsumer(
    settings,
    {
      // The library insists on a group.id; this consumer only assigns, so it joins no group.
      'group.id': readerGroupId(settings.topicPrefix ?? ''),
      'enable.auto.commit': false,
      'enable.auto.offset.store': false,
      'isolation.level': 'read_committed',
      'fetch.wait.max.ms': 100,
      'allow.auto.create.topics': false,
    } as never,
    'standby',
    // A checkpoint already deleted (retention) reads from the first offset still there.
    { 'auto.offset.reset': 'earliest' },
  ) as RdConsumer;
  raw.setDefaultConsumeTimeout(500);
  raw.setDefaultIsTimeoutOnlyForFirstMessage(true);
  await connect(raw);
  return {
    async bounds(topic) {
      const admin = createTopicAdmin(settings);
      try {
        const marks = await admin.watermarks(topic);
        return marks.map(({ partition, low, high }) => ({ partition, low: BigInt(low), high: BigInt(high) }));
      } finally {
        admin.close();
      }
    },
    assign: (assignment) => raw.assign(assignment.map((a) => ({ ...a }))),
    consume: (max) => call<ConsumedMessage[]>('consume', (cb) => raw.consume(max, cb as never)),
    position: (partitions) => raw.position(partitions.map((p) => ({ ...p }))),
    highWatermark: (topic, partition) => {
      const { highOffset } = raw.getWatermarkOffsets(topic, partition);
      return typeof highOffset === 'number' && highOffset >= 0 ? highOffset : undefined;
    },
    close: () => disconnect(raw),
  };
}
