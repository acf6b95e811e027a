// openWriter against a real broker: a topic with a small max.message.bytes takes many small records,
// because the writer's batches stay under the topic's limit (the broker refuses a batch over it whole).
import { describe, expect, it } from 'vitest';
import { withAdmin } from '../../runtime/kafka/admin.js';
import { ensureTopics } from '../../runtime/kafka/ensure-topics.js';
import { readToEnd } from '../../runtime/kafka/read-to-end.js';
import { openWriter } from '../../runtime/kafka/write-records.js';
import { testSettings } from '../helpers/rdkafka-io.js';
import { testStack } from '../helpers/stack.js';
import { randomPrefix } from './processors-harness.js';

describe('openWriter', () => {
  it('writes many small records to a topic whose max.message.bytes is smaller than a default batch', async () => {
    const settings = testSettings(testStack().brokers, 'it-write-records');
    const topic = `${randomPrefix('small-limit')}out`;
    await withAdmin(settings, (admin) =>
      ensureTopics(admin, [
        { name: topic, partitions: 1, replicationFactor: 1, configs: { 'max.message.bytes': '8000' } },
      ]),
    );
    const records = Array.from({ length: 200 }, (_, n) => ({
      key: `k${n}`,
      value: Buffer.alloc(1_000, n % 256),
    }));
    const writer = await openWriter(settings, topic);
    try {
      // With librdkafka's default batch (1 MB) the broker refused the first batch: "Message size too large".
      await writer.write(records);
    } finally {
      await writer.close();
    }
    let read = 0;
    await readToEnd({
      settings,
      topic,
      partitions: [{ partition: 0 }],
      onRecord: () => {
        read++;
      },
    });
    expect(read).toBe(200);
  }, 60_000);
});
