import { describe, expect, it } from 'vitest';
import { operationFailureSchema } from '../../../../processors/dedupe-router/contract.js';
import { buildFailure } from '../../../../processors/dedupe-router/failure.js';
import { type JsonObject, parseBody } from '../../../../processors/dedupe-router/parse-body.js';
import { parseTrigger } from '../../../../processors/dedupe-router/trigger.js';
import { envelopeFor } from '../fixtures.js';

function json(text: string): JsonObject {
  const result = parseBody(Buffer.from(text));
  if (!result.ok) throw new Error(result.message);
  return result.value;
}

describe('buildFailure', () => {
  it('names the id asked about, the root field and the description', () => {
    const raw = json('{"__typename":"OperationFailure","description":"Energy switch not found"}');
    const value = buildFailure(
      {
        envelope: envelopeFor({ webhook: { id: 'wh_0004' } }, { source: 'fixtures' }),
        trigger: parseTrigger('EnergySwitchUpdated')!,
        occurredAt: 5,
        variables: json('{"id":"es_999"}'),
      },
      'es_999',
      'getEnergySwitch',
      operationFailureSchema.parse(raw),
      raw,
    );
    expect(value).toEqual({
      webhookId: 'wh_0004',
      source: 'fixtures',
      ingestId: 'ingest-1',
      trigger: 'EnergySwitchUpdated',
      entity: 'EnergySwitch',
      action: 'Updated',
      occurredAt: 5,
      receivedAt: 1_800_000_000_000,
      entityId: 'es_999',
      rootField: 'getEnergySwitch',
      description: 'Energy switch not found',
      queryVariables: '{"id":"es_999"}',
      data: '{"__typename":"OperationFailure","description":"Energy switch not found"}',
    });
  });
});
