// Ports for the JVMs a stack starts: free, and out of the range outgoing connections take theirs from.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { freePort, portIsFree } from '../../../tools/stack/ports.js';

const ephemeralLow = (() => {
  try {
    return Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
  } catch {
    return 32_768;
  }
})();

describe('a free port for a server that binds it later', () => {
  it('is below the range the OS takes outgoing connections’ ports from, and free', async () => {
    const ports = [];
    for (let i = 0; i < 20; i++) ports.push(await freePort());
    for (const port of ports) {
      expect(port).toBeLessThan(ephemeralLow);
      expect(port).toBeGreaterThanOrEqual(10_000);
    }
    expect(await portIsFree(ports[0]!)).toBe(true);
  });

  it('is never handed out twice in a row by one process', async () => {
    const ports = await Promise.all(Array.from({ length: 40 }, () => freePort()));
    expect(new Set(ports).size).toBe(ports.length);
  });
});
