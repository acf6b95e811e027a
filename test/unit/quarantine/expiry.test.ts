// Which quarantined requests promote holds back: one received so long ago that another attempt of its id,
// routed before, may have left the router's memory when the promoted record reaches it.
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../runtime/config.js';
import { routerMemory } from '../../../tools/cli/commands/quarantine.js';
import { isPromoteExpired, promotableForMs, type RouterMemory } from '../../../tools/quarantine/expiry.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const NOW = Date.parse('2026-11-27T06:00:00Z');
const minimal = { KAFKA_BROKERS: '127.0.0.1:9092', SCHEMA_REGISTRY_URL: 'http://127.0.0.1:8081' };

describe('the age up to which a quarantined request is promoted', () => {
  it('is DEDUPE_WINDOW less WEBHOOK_MAX_AGE, WEBHOOK_MAX_AHEAD and 1 h, read from the router configuration', () => {
    const memory = routerMemory(loadConfig(minimal));
    expect(memory).toEqual({ dedupeWindowMs: 7 * DAY, maxAgeMs: 73 * HOUR, maxAheadMs: 5 * MINUTE });
    expect(promotableForMs(memory)).toBe(93 * HOUR + 55 * MINUTE);
    const longer = routerMemory(loadConfig({ ...minimal, DEDUPE_WINDOW: '14d', WEBHOOK_MAX_AHEAD: '10m' }));
    expect(promotableForMs(longer)).toBe(14 * DAY - 73 * HOUR - 10 * MINUTE - HOUR);
  });

  it('holds back a request received longer ago than that, and only such a request', () => {
    const memory = routerMemory(loadConfig(minimal));
    const edge = NOW - promotableForMs(memory);
    expect(isPromoteExpired(edge, NOW, memory)).toBe(false);
    expect(isPromoteExpired(edge - 1, NOW, memory)).toBe(true);
    expect(isPromoteExpired(NOW, NOW, memory)).toBe(false);
    expect(isPromoteExpired(NOW - 3 * DAY, NOW, memory)).toBe(false);
    // QUARANTINE_RETENTION keeps a request 7 days: those of the last 3 are held back by default.
    expect(isPromoteExpired(NOW - 4 * DAY, NOW, memory)).toBe(true);
    expect(isPromoteExpired(NOW - 7 * DAY, NOW, memory)).toBe(true);
  });

  it('keeps the id known at the edge: the earliest routing of another attempt is still inside the window', () => {
    const memory: RouterMemory = { dedupeWindowMs: 7 * DAY, maxAgeMs: 73 * HOUR, maxAheadMs: 5 * MINUTE };
    const receivedAt = NOW - promotableForMs(memory);
    // Routed by the router: received at most WEBHOOK_MAX_AGE after its date. Another attempt was
    // routed no earlier than WEBHOOK_MAX_AHEAD before that date.
    const earliestDate = receivedAt - memory.maxAgeMs;
    const earliestRouting = earliestDate - memory.maxAheadMs;
    // The router knows an id while its decision's record time ≥ stream time − DEDUPE_WINDOW, with the margin to spare.
    expect(earliestRouting).toBe(NOW - memory.dedupeWindowMs + HOUR);
  });

  it('is nothing when DEDUPE_WINDOW is as short as the config allows: every request is held back', () => {
    const tight = routerMemory(loadConfig({ ...minimal, DEDUPE_WINDOW: '4385m' }));
    expect(tight.dedupeWindowMs).toBe(tight.maxAgeMs + tight.maxAheadMs);
    expect(promotableForMs(tight)).toBe(-HOUR);
    expect(isPromoteExpired(NOW, NOW, tight)).toBe(true);
    expect(isPromoteExpired(NOW - MINUTE, NOW, tight)).toBe(true);
    // One minute shorter is refused at start, as for the router.
    expect(() => loadConfig({ ...minimal, DEDUPE_WINDOW: '4384m' })).toThrow(/DEDUPE_WINDOW/);
  });
});
