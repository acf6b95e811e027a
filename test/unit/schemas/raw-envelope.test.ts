import avro from 'avsc';
import { describe, expect, it } from 'vitest';
import { RAW_ENVELOPE_SCHEMA, type RawEnvelope } from '../../../schemas/raw-envelope.js';
import { loadSchema } from '../../../schemas/schema-files.js';

// Every field present, so the interface and the .avsc cannot drift apart unnoticed.
const sample: Required<RawEnvelope> = {
  webhookId: 'e6b3c2a0-1',
  source: 'energy',
  trigger: 'UserAdded',
  webhookDate: '2026-01-31T10:00:00.000Z',
  receivedAt: Date.UTC(2026, 0, 31, 10, 0, 1),
  body: Buffer.from('{"webhook":{"id":"e6b3c2a0-1"}}'),
  headers: { 'content-type': 'application/json', 'x-signature': 'sha1=00' },
  query: 'tenant=1',
  verifiedKeyId: 'k2026a',
  ingestId: '01J0000000000000000000000',
};

describe('the RawEnvelope type', () => {
  const schema = JSON.parse(loadSchema(RAW_ENVELOPE_SCHEMA)) as avro.Schema & { fields: { name: string }[] };
  const type = avro.Type.forSchema(schema);

  it('has exactly the fields of raw-envelope.avsc, in its order', () => {
    expect(Object.keys(sample)).toEqual(schema.fields.map((f) => f.name));
  });

  it('a value of the type validates against the schema and survives a round trip', () => {
    const errors: string[] = [];
    expect(
      type.isValid(sample, { errorHook: (path) => errors.push(path.join('.')) }),
      errors.join(', '),
    ).toBe(true);
    expect(type.fromBuffer(type.toBuffer(sample))).toEqual(sample);
  });

  it('a value with its nullable fields null validates too', () => {
    const minimal: RawEnvelope = {
      ...sample,
      trigger: null,
      webhookDate: null,
      query: null,
      verifiedKeyId: null,
    };
    expect(type.isValid(minimal)).toBe(true);
  });
});
