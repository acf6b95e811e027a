import { describe, expect, it } from 'vitest';
import { bytesText, formatRecord, jsonSafe, type TailRecord } from '../../../tools/tail/format.js';
import { logicalStreams, resolveTopic } from '../../../tools/tail/streams.js';

const record = (overrides: Partial<TailRecord> = {}): TailRecord => ({
  topic: 't.webhooks.raw',
  partition: 3,
  offset: '42',
  timestamp: String(Date.UTC(2026, 10, 20, 10, 15, 30, 123)),
  key: Buffer.from('wh_0001'),
  value: { webhookId: 'wh_0001' },
  ...overrides,
});

describe('a tailed record as a JSON line', () => {
  it('prints topic, partition, offset, timestamp, key and value, in that order', () => {
    const line = formatRecord(record());
    expect(line).not.toContain('\n');
    expect(Object.keys(JSON.parse(line))).toEqual([
      'topic',
      'partition',
      'offset',
      'timestamp',
      'key',
      'value',
    ]);
    expect(JSON.parse(line)).toEqual({
      topic: 't.webhooks.raw',
      partition: 3,
      offset: 42,
      timestamp: '2026-11-20T10:15:30.123Z',
      key: 'wh_0001',
      value: { webhookId: 'wh_0001' },
    });
  });

  it('shows a UTF-8 body as its text, digits and all, and says so', () => {
    const body = '{"savings":{"amount":199.90},"name":"Zoë"}';
    const line = JSON.parse(formatRecord(record({ value: { body: Buffer.from(body), webhookId: 'wh_1' } })));
    expect(line.value.body).toBe(body);
    expect(line.encodings).toEqual({ 'value.body': 'utf8' });
  });

  it('shows bytes that are not UTF-8 as base64, and says so', () => {
    const bytes = Buffer.from([0x7b, 0x22, 0xff, 0x00, 0xc3, 0x28, 0x7d]);
    const line = JSON.parse(formatRecord(record({ value: { body: bytes } })));
    expect(Buffer.from(line.value.body, 'base64')).toEqual(bytes);
    expect(line.encodings).toEqual({ 'value.body': 'base64' });
  });

  it('prints a tombstone as value null, and a missing key as null', () => {
    const line = JSON.parse(formatRecord(record({ key: null, value: null })));
    expect(line.value).toBeNull();
    expect(line.key).toBeNull();
    expect(line).not.toHaveProperty('encodings');
  });

  it('handles bigints, dates, maps, nested bytes and undefined', () => {
    const encodings = {};
    const value = {
      big: 2n ** 64n,
      when: new Date(Date.UTC(2026, 0, 1)),
      headers: new Map([['x', 'y']]),
      list: [Buffer.from('a'), undefined],
    };
    expect(jsonSafe(value, 'value', encodings)).toEqual({
      big: '18446744073709551616',
      when: '2026-01-01T00:00:00.000Z',
      headers: { x: 'y' },
      list: ['a', null],
    });
    expect(encodings).toEqual({ 'value.list[0]': 'utf8' });
    expect(() => formatRecord(record({ value }))).not.toThrow();
  });

  it('shows a value that is not registry-framed as its bytes, a key that is not UTF-8 as base64', () => {
    const line = JSON.parse(
      formatRecord(record({ key: Buffer.from([0xff]), value: Buffer.from([1, 2, 3]) })),
    );
    expect(line.key).toBe('/w==');
    expect(line.value).toBe('AQID');
    expect(line.encodings).toEqual({ key: 'base64', value: 'base64' });
  });

  it('adds record headers and a decode error when there are any', () => {
    const line = JSON.parse(
      formatRecord(
        record({ headers: { 'hookledger-redrive': Buffer.from('1') }, decodeError: 'unknown schema id 7' }),
      ),
    );
    expect(line.headers).toEqual({ 'hookledger-redrive': '1' });
    expect(line.decodeError).toBe('unknown schema id 7');
  });

  it('tells UTF-8 from other bytes', () => {
    expect(bytesText(Buffer.from('héllo'))).toEqual({ text: 'héllo', encoding: 'utf8' });
    expect(bytesText(Buffer.from([0xc3, 0x28]))).toEqual({ text: 'wyg=', encoding: 'base64' });
  });
});

describe('the stream to tail', () => {
  it('takes a logical name with TOPIC_PREFIX, and any other name as the full topic name', () => {
    expect(logicalStreams()).toEqual(
      expect.arrayContaining([
        'webhooks.raw',
        'webhooks.unique',
        'entity.user',
        'entity.energy-switch.latest',
      ]),
    );
    expect(resolveTopic('webhooks.raw', 'staging.')).toBe('staging.webhooks.raw');
    expect(resolveTopic('entity.energy-switch.latest', 'staging.')).toBe(
      'staging.entity.energy-switch.latest',
    );
    expect(resolveTopic('staging.webhooks.raw', 'staging.')).toBe('staging.webhooks.raw');
    expect(resolveTopic('someone-elses-topic', '')).toBe('someone-elses-topic');
  });
});
