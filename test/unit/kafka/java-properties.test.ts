import { describe, expect, it } from 'vitest';
import { parseJavaProperties } from '../../../runtime/kafka/java-properties.js';

describe('a Java-style properties file', () => {
  it('reads key=value, key: value and key value, skipping comments and blank lines', () => {
    const text =
      '# librdkafka\n! also a comment\n\nfetch.wait.max.ms=100\nsocket.keepalive.enable: true\n  client.rack   eu-west-1a\n';
    expect(parseJavaProperties(text)).toEqual([
      { key: 'fetch.wait.max.ms', value: '100', line: 4 },
      { key: 'socket.keepalive.enable', value: 'true', line: 5 },
      { key: 'client.rack', value: 'eu-west-1a', line: 6 },
    ]);
  });

  it('joins continued lines and reads escapes', () => {
    const text =
      'sasl.oauthbearer.extensions=logicalCluster=lkc-1,\\\n    identityPoolId=pool-2\nk\\=ey=a\\tb\n';
    expect(parseJavaProperties(text)).toEqual([
      { key: 'sasl.oauthbearer.extensions', value: 'logicalCluster=lkc-1,identityPoolId=pool-2', line: 1 },
      { key: 'k=ey', value: 'a\tb', line: 3 },
    ]);
  });

  it('keeps "=" inside values (base64, extensions)', () => {
    expect(parseJavaProperties('ssl.key.password=YWJj==')).toEqual([
      { key: 'ssl.key.password', value: 'YWJj==', line: 1 },
    ]);
  });
});
