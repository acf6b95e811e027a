import { describe, expect, it } from 'vitest';
import { ScramError, saslName, scramClient } from '../../../runtime/kafka/scram.js';

describe('SCRAM, as the RFCs spell it out', () => {
  it('computes RFC 7677’s SCRAM-SHA-256 exchange byte for byte', () => {
    const client = scramClient('sha256', 'user', 'pencil', 'rOprNGfwEbeRWgbNEkqO');
    expect(client.first()).toBe('n,,n=user,r=rOprNGfwEbeRWgbNEkqO');
    const final = client.final(
      'r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096',
    );
    expect(final).toBe(
      'c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=',
    );
    expect(() => client.verify('v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=')).not.toThrow();
  });

  it('computes RFC 5802’s SCRAM-SHA-1 exchange byte for byte (the same math with another hash)', () => {
    const client = scramClient('sha1', 'user', 'pencil', 'fyko+d2lbbFgONRv9qkxdawL');
    expect(client.first()).toBe('n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL');
    const final = client.final('r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096');
    expect(final).toBe('c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=');
    expect(() => client.verify('v=rmF9pqV8S7suAoZWja4dJRkFsKQ=')).not.toThrow();
  });

  it('refuses a server whose signature proves it does not know the password', () => {
    const client = scramClient('sha256', 'user', 'pencil', 'rOprNGfwEbeRWgbNEkqO');
    client.final('r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096');
    expect(() => client.verify('v=AAAATRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=')).toThrow(ScramError);
    expect(() => client.verify('e=invalid-proof')).toThrow('the server refused: invalid-proof');
  });

  it('refuses a server nonce that does not extend its own', () => {
    const client = scramClient('sha512', 'user', 'pencil', 'abc');
    expect(() => client.final('r=xyz123,s=QSXCR+Q6sek8bf92,i=4096')).toThrow(/nonce/);
    expect(() => client.final('r=abc,s=QSXCR+Q6sek8bf92,i=4096')).toThrow(/nonce/);
    expect(() => client.final('r=abcdef,i=4096')).toThrow(/not a server-first-message/);
  });

  it('escapes "=" and "," in user names', () => {
    expect(saslName('a=b,c')).toBe('a=3Db=2Cc');
  });
});
