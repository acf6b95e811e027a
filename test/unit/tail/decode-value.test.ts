// tail's decoding: a value that does not decode prints as bytes with the reason; a registry that cannot
// be asked ends the tail instead (every value after would print as bytes, and the tail exit 0).
import { describe, expect, it } from 'vitest';
import { decodeValue, RegistryUnavailableError } from '../../../tools/tail/tail.js';

/** The registry's framing: magic byte 0, schema id 7, then (here meaningless) Avro bytes. */
const framed = Buffer.from([0, 0, 0, 0, 7, 2, 4]);
const failingWith = (error: unknown) => ({
  decode: async () => {
    throw error;
  },
});
const answered = (status: number, message: string) => Object.assign(new Error(message), { status });

describe("tail's value decoding", () => {
  it('keeps the bytes, with the reason, of a value that does not decode', async () => {
    for (const error of [answered(404, 'Schema 7 not found'), new Error('invalid union index: 9')]) {
      expect(await decodeValue(failingWith(error), framed, undefined)).toEqual({
        value: framed,
        decodeError: error.message,
      });
    }
    // No registry framing at all: bytes, no reason needed.
    expect(await decodeValue(failingWith(new Error('not asked')), Buffer.from('plain'), undefined)).toEqual({
      value: Buffer.from('plain'),
    });
  });

  it('ends the tail when the registry cannot be asked', async () => {
    for (const error of [
      answered(503, 'Service Unavailable'),
      answered(400, 'Error, status 400: connect ECONNREFUSED 127.0.0.1:8081'),
      answered(400, 'Timeout (5000ms)'),
    ]) {
      await expect(decodeValue(failingWith(error), framed, undefined)).rejects.toThrow(
        RegistryUnavailableError,
      );
    }
  });
});
