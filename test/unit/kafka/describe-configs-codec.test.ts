import { describe, expect, it } from 'vitest';
import {
  DescribeConfigsDecodeError,
  decodeDescribeConfigsResponse,
  encodeDescribeConfigsRequest,
  RESOURCE_TYPE,
} from '../../../runtime/kafka/describe-configs-codec.js';
import { describeConfigsResponse, i8, i16, i32, str } from './describe-configs-fixtures.js';

describe('the DescribeConfigs v1 request', () => {
  it('is framed as the protocol guide lays it out, byte for byte', () => {
    const frame = encodeDescribeConfigsRequest({
      correlationId: 7,
      clientId: 'hl',
      resources: [
        { type: RESOURCE_TYPE.TOPIC, name: 't1' },
        { type: RESOURCE_TYPE.BROKER, name: '1', keys: ['log.retention.ms'] },
      ],
    });

    const expected = Buffer.concat([
      i32(52), // size of everything after it
      // request header v1
      i16(32), // api key: DescribeConfigs
      i16(1), // api version
      i32(7), // correlation id
      str('hl'), // client id
      // body
      i32(2), // resources
      i8(2), // TOPIC
      str('t1'),
      i32(-1), // configuration keys: null, every key
      i8(4), // BROKER
      str('1'),
      i32(1),
      str('log.retention.ms'),
      i8(0), // include synonyms: false
    ]);
    expect(frame.toString('hex')).toBe(expected.toString('hex'));
    expect(frame.length).toBe(4 + 52);
  });

  it('writes a null client id as length -1 and asks for synonyms when told to', () => {
    const frame = encodeDescribeConfigsRequest({
      correlationId: 1,
      clientId: null,
      resources: [],
      includeSynonyms: true,
    });
    expect(frame.toString('hex')).toBe(
      Buffer.concat([i32(15), i16(32), i16(1), i32(1), i16(-1), i32(0), i8(1)]).toString('hex'),
    );
  });
});

describe('the DescribeConfigs v1 response', () => {
  it('decodes every field, with a null value for a sensitive setting and an error per resource', () => {
    const decoded = decodeDescribeConfigsResponse(describeConfigsResponse(7));

    expect(decoded).toEqual({
      correlationId: 7,
      throttleTimeMs: 0,
      results: [
        {
          errorCode: 0,
          errorMessage: null,
          type: 2,
          name: 't1',
          configs: [
            {
              name: 'cleanup.policy',
              value: 'compact,delete',
              readOnly: false,
              source: 1,
              sensitive: false,
              synonyms: [],
            },
            {
              name: 'x.secret',
              value: null,
              readOnly: true,
              source: 5,
              sensitive: true,
              synonyms: [{ name: 'x.secret', value: null, source: 5 }],
            },
          ],
        },
        { errorCode: 3, errorMessage: 'Unknown topic', type: 2, name: 'gone', configs: [] },
      ],
    });
  });

  it('refuses a truncated answer instead of reading past its end', () => {
    const whole = describeConfigsResponse(7);
    for (const cut of [3, 10, whole.length - 1]) {
      expect(() => decodeDescribeConfigsResponse(whole.subarray(0, cut))).toThrow(DescribeConfigsDecodeError);
    }
  });

  it('refuses bytes left over, as another version of the response would leave', () => {
    const longer = Buffer.concat([describeConfigsResponse(7), i16(0)]);
    expect(() => decodeDescribeConfigsResponse(longer)).toThrow(/2 bytes left after the response/);
  });

  it('refuses an array count larger than the bytes that follow', () => {
    const garbage = Buffer.concat([i32(7), i32(0), i32(1_000_000)]);
    expect(() => decodeDescribeConfigsResponse(garbage)).toThrow(/1000000 results announced/);
  });
});
