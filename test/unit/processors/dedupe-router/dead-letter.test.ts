import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  buildDeadLetter,
  DLQ_REASONS,
  DLQ_STAGES,
} from '../../../../processors/dedupe-router/dead-letter.js';
import { undecodableDeadLetter } from '../../../../processors/dedupe-router/poison.js';
import { envelopeFor } from '../fixtures.js';

describe('buildDeadLetter', () => {
  it('keeps every envelope field, byte for byte, beside the reason and the stage', () => {
    const envelope = envelopeFor('{"broken', { trigger: 'UserAdded', webhookDate: 'x', query: 'a=1' });
    const value = buildDeadLetter(envelope, 'body-not-json', 'the body is not JSON', 'dedupe-router.parse');
    const { reason, message, stage, ...rest } = value;
    expect({ reason, message, stage }).toEqual({
      reason: 'body-not-json',
      message: 'the body is not JSON',
      stage: 'dedupe-router.parse',
    });
    expect(rest).toEqual(envelope);
  });

  it('reason codes are unique kebab-case words', () => {
    expect(new Set(DLQ_REASONS).size).toBe(DLQ_REASONS.length);
    for (const reason of DLQ_REASONS) expect(reason).toMatch(/^[a-z]+(-[a-z]+)*$/);
  });
});

describe('the dead letter of a record that is not a raw envelope', () => {
  it('carries a listed reason and stage, like every other dead letter', () => {
    const value = undecodableDeadLetter(
      {
        ok: false,
        message: 'unknown magic byte',
        key: 'k',
        value: Buffer.from('garbage'),
        timestamp: 1,
        position: 'raw/0/7',
      },
      {},
    );
    expect(DLQ_REASONS).toContain(value.reason);
    expect(DLQ_STAGES).toContain(value.stage);
    expect({ reason: value.reason, stage: value.stage }).toEqual({
      reason: 'envelope-undecodable',
      stage: 'dedupe-router.decode',
    });
  });
});

describe("docs/topics.md's table of DLQ reasons", () => {
  it('names every reason code, in the order of the list, each with its stage', () => {
    const doc = readFileSync(new URL('../../../../docs/topics.md', import.meta.url), 'utf8');
    const section = doc.slice(
      doc.indexOf('### `webhooks.dlq`'),
      doc.indexOf('\n## ', doc.indexOf('### `webhooks.dlq`')),
    );
    const rows = [...section.matchAll(/^\| `([a-z-]+)` \| ([a-z]+) \|/gm)].map(([, reason, stage]) => ({
      reason,
      // `fetch` is the enrich stage's; the others are the router's.
      stage: stage === 'fetch' ? 'enrich.fetch' : `dedupe-router.${stage}`,
    }));
    expect(rows.map((row) => row.reason)).toEqual([...DLQ_REASONS]);
    for (const { stage } of rows) expect(DLQ_STAGES).toContain(stage);
  });
});
