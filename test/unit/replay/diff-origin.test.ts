import { describe, expect, it } from 'vitest';
import { originOf } from '../../../tools/replay/diff.js';

describe('where a live record came from', () => {
  it('is its source, webhook id and ingest id', () => {
    const a = originOf({ source: 'energy', webhookId: 'w1', ingestId: 'i1', trigger: 'UserAdded' });
    expect(a).toBe(originOf({ source: 'energy', webhookId: 'w1', ingestId: 'i1' }));
    expect(a).not.toBe(originOf({ source: 'energy', webhookId: 'w1', ingestId: 'i2' }));
  });

  it('is the raw position of a dead letter of a record that was no envelope', () => {
    const byMessage = originOf({
      source: '',
      webhookId: 'some-key',
      ingestId: '',
      message: 'the raw record at p.webhooks.raw/2/17 is not a raw envelope: unknown schema id',
    });
    const byId = originOf({
      source: '',
      webhookId: 'offset:p.webhooks.raw/2/17',
      ingestId: '',
      message: 'processor-error: boom',
    });
    expect(byMessage).toBeDefined();
    expect(byId).toBe(byMessage);
  });

  it('is unknown for anything else', () => {
    expect(originOf(null)).toBeUndefined();
    expect(originOf({ webhookId: 'w1', fields: {} })).toBeUndefined();
  });
});
