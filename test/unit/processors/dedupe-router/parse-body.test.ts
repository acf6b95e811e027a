import { describe, expect, it } from 'vitest';
import {
  isJsonObject,
  LosslessNumber,
  parseBody,
  scalarText,
  toJsonText,
} from '../../../../processors/dedupe-router/parse-body.js';

const bytes = (text: string) => Buffer.from(text, 'utf8');

describe('parseBody', () => {
  it('keeps money as the exact decimal text sent', () => {
    const result = parseBody(bytes('{"savings":{"amount":199.90},"spend":210.10}'));
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    const savings = result.value.savings as { amount: LosslessNumber };
    expect(savings.amount).toBeInstanceOf(LosslessNumber);
    expect(savings.amount.value).toBe('199.90');
    expect(toJsonText(result.value)).toBe('{"savings":{"amount":199.90},"spend":210.10}');
  });

  it('keeps integers beyond 2^53 exact', () => {
    const result = parseBody(bytes('{"n":12345678901234567890}'));
    expect(result.ok && toJsonText(result.value)).toBe('{"n":12345678901234567890}');
  });

  it('reads a body with a byte order mark', () => {
    expect(parseBody(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), bytes('{"a":1}')])).ok).toBe(true);
  });

  it('a truncated body is not JSON', () => {
    expect(parseBody(bytes('{"webhook":{"id":"wh_0500"},"data":{'))).toMatchObject({
      ok: false,
      reason: 'body-not-json',
    });
  });

  it('bytes that are not UTF-8 are not JSON', () => {
    expect(parseBody(Buffer.from([0x7b, 0x22, 0xc3, 0x28, 0x22, 0x7d]))).toMatchObject({
      ok: false,
      reason: 'body-not-json',
      message: 'the body is not valid UTF-8',
    });
  });

  it('an empty body is not JSON', () => {
    expect(parseBody(Buffer.alloc(0))).toMatchObject({ ok: false, reason: 'body-not-json' });
  });

  it('a key given twice with different values is not JSON it can read', () => {
    expect(parseBody(bytes('{"id":"a","id":"b"}'))).toMatchObject({ ok: false, reason: 'body-not-json' });
    expect(parseBody(bytes('{"id":"a","id":"a"}')).ok).toBe(true);
  });

  it.each([['[]'], ['"text"'], ['42'], ['null'], ['true']])('%s is JSON but not an object', (text) => {
    expect(parseBody(bytes(text))).toMatchObject({ ok: false, reason: 'body-not-object' });
  });

  it('a __proto__ key is an ordinary key, not the prototype', () => {
    const result = parseBody(bytes('{"__proto__":{"polluted":true}}'));
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(Object.keys(result.value)).toEqual(['__proto__']);
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
  });
});

describe('scalarText and isJsonObject', () => {
  it('writes each JSON value as the table shows it', () => {
    expect(scalarText('x')).toBe('x');
    expect(scalarText(new LosslessNumber('210.10'))).toBe('210.10');
    expect(scalarText(true)).toBe('true');
    expect(scalarText(null)).toBeNull();
    expect(scalarText(['a', new LosslessNumber('1.50')])).toBe('["a",1.50]');
    expect(scalarText({})).toBe('{}');
  });

  it('tells objects from arrays, numbers and null', () => {
    expect(isJsonObject({})).toBe(true);
    expect(isJsonObject([])).toBe(false);
    expect(isJsonObject(null)).toBe(false);
    expect(isJsonObject(new LosslessNumber('1'))).toBe(false);
  });
});
