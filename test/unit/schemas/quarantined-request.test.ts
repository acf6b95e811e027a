import avro from 'avsc';
import { describe, expect, it } from 'vitest';
import { QUARANTINED_REQUEST_SCHEMA, type QuarantinedRequest } from '../../../schemas/quarantined-request.js';
import { loadSchema } from '../../../schemas/schema-files.js';

// Every field present, so the interface and the .avsc cannot drift apart unnoticed.
const sample: Required<QuarantinedRequest> = {
  webhookId: 'e6b3c2a0-1',
  source: 'energy',
  trigger: 'UserAdded',
  webhookDate: '2026-01-31T10:00:00.000Z',
  receivedAt: Date.UTC(2026, 0, 31, 10, 0, 1),
  body: Buffer.from('{"webhook":{"id":"e6b3c2a0-1"}}'),
  headers: { 'content-type': 'application/json', 'x-signature': 'sha1=00' },
  query: 'tenant=1',
  reason: 'mismatch',
  triedKeyIds: ['k2026a', 'k2026b'],
  ingestId: '01J0000000000000000000000',
};

describe('the QuarantinedRequest type', () => {
  const schema = JSON.parse(loadSchema(QUARANTINED_REQUEST_SCHEMA)) as avro.Schema & {
    fields: { name: string }[];
  };
  const type = avro.Type.forSchema(schema);

  it('has exactly the fields of quarantined-request.avsc, in its order', () => {
    expect(Object.keys(sample)).toEqual(schema.fields.map((f) => f.name));
  });

  it('a value of the type validates against the schema and survives a round trip', () => {
    expect(type.isValid(sample)).toBe(true);
    expect(type.fromBuffer(type.toBuffer(sample))).toEqual(sample);
    expect(type.isValid({ ...sample, trigger: null, webhookDate: null, query: null, triedKeyIds: [] })).toBe(
      true,
    );
  });
});
