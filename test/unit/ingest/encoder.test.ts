// The envelope encoder answers at once once its schema is cached, and leaves everything else, errors
// included, to the registry library's asynchronous encode.
import { describe, expect, it } from 'vitest';
import { INGEST_ERR_UNAVAILABLE } from '../../../ingest/errors.js';
import { RegistryEncoder } from '../../../ingest/producer/encoder.js';
import { createLogger } from '../../../runtime/log.js';

function encoderWith(cached: (value: unknown) => Buffer | undefined) {
  const encoded: unknown[] = [];
  const encoder = new RegistryEncoder<{ n: number }>({
    serde: {
      register: async () => 7,
      encode: async (schemaId, value) => {
        encoded.push(value);
        if ((value as { n: number }).n < 0) throw new Error('invalid "int"');
        return Buffer.from(`library:${schemaId}`);
      },
      encodeCached: (_schemaId, value) => cached(value),
    },
    subject: 'test-value',
    schema: '{"type":"record","name":"T","fields":[{"name":"n","type":"int"}]}',
    logger: createLogger({ level: 'silent' }),
  });
  return { encoder, encoded };
}

describe('RegistryEncoder', () => {
  it('refuses with a 503 error until its subject is registered', async () => {
    const { encoder } = encoderWith(() => Buffer.from('cached'));
    expect(encoder.ready).toBe(false);
    await expect(encoder.encode({ n: 1 })).rejects.toBeInstanceOf(INGEST_ERR_UNAVAILABLE);
  });

  it('gives the cached writer’s bytes at once, without the library', async () => {
    const { encoder, encoded } = encoderWith(() => Buffer.from('cached'));
    await encoder.start();
    const value = encoder.encode({ n: 1 });
    expect(Buffer.isBuffer(value)).toBe(true);
    expect(value.toString()).toBe('cached');
    expect(encoded).toEqual([]);
  });

  it('uses the library while the schema is not cached, and for a value the cached writer leaves', async () => {
    const { encoder, encoded } = encoderWith(() => undefined);
    await encoder.start();
    await expect(encoder.encode({ n: 1 })).resolves.toEqual(Buffer.from('library:7'));
    await expect(encoder.encode({ n: -1 })).rejects.toThrow('invalid "int"');
    expect(encoded).toEqual([{ n: 1 }, { n: -1 }]);
  });
});
