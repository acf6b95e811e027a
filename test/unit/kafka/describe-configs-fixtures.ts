// Byte fixtures for DescribeConfigs v1, written field by field from the protocol guide (not with the codec).

export const i8 = (n: number) => Buffer.from([n & 0xff]);
export const i16 = (n: number) => {
  const b = Buffer.alloc(2);
  b.writeInt16BE(n);
  return b;
};
export const i32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
};
/** STRING: int16 length, then UTF-8. */
export const str = (s: string) => Buffer.concat([i16(Buffer.byteLength(s)), Buffer.from(s, 'utf8')]);
/** NULLABLE_STRING's null. */
export const nullString = () => i16(-1);

/**
 * A response payload (after its int32 size): topic "t1" with a plain setting and a sensitive one (null
 * value, one synonym), and topic "gone" refused with UNKNOWN_TOPIC_OR_PARTITION.
 */
export function describeConfigsResponse(correlationId: number): Buffer {
  return Buffer.concat([
    i32(correlationId), // response header v0
    i32(0), // throttle time ms
    i32(2), // results
    // result 1
    i16(0), // error code
    nullString(), // error message
    i8(2), // TOPIC
    str('t1'),
    i32(2), // configs
    str('cleanup.policy'),
    str('compact,delete'),
    i8(0), // read only
    i8(1), // source: DYNAMIC_TOPIC_CONFIG
    i8(0), // sensitive
    i32(0), // synonyms
    str('x.secret'),
    nullString(), // value withheld
    i8(1),
    i8(5), // source: DEFAULT_CONFIG
    i8(1),
    i32(1),
    str('x.secret'),
    nullString(),
    i8(5),
    // result 2
    i16(3), // UNKNOWN_TOPIC_OR_PARTITION
    str('Unknown topic'),
    i8(2),
    str('gone'),
    i32(0),
  ]);
}

/** A response payload with one topic's configs and no error. */
export function topicConfigsResponse(
  correlationId: number,
  topic: string,
  configs: Record<string, string>,
): Buffer {
  const entries = Object.entries(configs).map(([name, value]) =>
    Buffer.concat([str(name), str(value), i8(0), i8(1), i8(0), i32(0)]),
  );
  return Buffer.concat([
    i32(correlationId),
    i32(0),
    i32(1),
    i16(0),
    nullString(),
    i8(2),
    str(topic),
    i32(entries.length),
    ...entries,
  ]);
}

/** The same for one broker (resource type 4, named by its id). */
export function brokerConfigsResponse(
  correlationId: number,
  brokerId: number,
  configs: Record<string, string>,
): Buffer {
  const payload = topicConfigsResponse(correlationId, String(brokerId), configs);
  // The resource type sits after correlation id, throttle, count, error code and null message.
  payload.writeInt8(4, 4 + 4 + 4 + 2 + 2);
  return payload;
}
