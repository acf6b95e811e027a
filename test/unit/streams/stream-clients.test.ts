import { describe, expect, it } from 'vitest';
import { heartbeatIntervalMs } from '../../../runtime/streams/stream-clients.js';

describe('the stream consumer’s heartbeat', () => {
  it('beats every tenth of the session, at least every 500 ms, as before for sessions of 5 s and more', () => {
    expect(heartbeatIntervalMs(30_000)).toBe(3_000);
    expect(heartbeatIntervalMs(6_000)).toBe(600);
    expect(heartbeatIntervalMs(3_000)).toBe(500);
  });

  it('beats at least three times per session however short it is (Kafka’s guidance: a third at most)', () => {
    for (const session of [1_000, 1_200, 1_499, 1_500, 2_000, 3_000, 6_000, 300_000]) {
      const heartbeat = heartbeatIntervalMs(session);
      expect(heartbeat * 3, `session ${session} ms`).toBeLessThanOrEqual(session);
      expect(heartbeat, `session ${session} ms`).toBeGreaterThan(0);
    }
    expect(heartbeatIntervalMs(1_000)).toBe(333);
  });
});
