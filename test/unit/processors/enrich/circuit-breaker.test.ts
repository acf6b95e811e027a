import { describe, expect, it } from 'vitest';
import { CircuitBreaker } from '../../../../processors/enrich/circuit-breaker.js';

function breaker() {
  const clock = { now: 0 };
  const b = new CircuitBreaker({ failures: 3, cooldownMs: 1_000, maxCooldownMs: 4_000 }, () => clock.now);
  return { b, clock };
}

describe('CircuitBreaker', () => {
  it('opens after the configured failures in a row, and a success in between resets the count', () => {
    const { b } = breaker();
    b.failed();
    b.failed();
    b.succeeded();
    b.failed();
    b.failed();
    expect(b.state).toBe('closed');
    b.failed();
    expect(b.state).toBe('open');
    expect(b.tryAcquire()).toBe(false);
  });

  it('lets exactly one probe through once the cool-down is over', () => {
    const { b, clock } = breaker();
    for (let i = 0; i < 3; i++) b.failed();
    clock.now = 999;
    expect(b.state).toBe('open');
    clock.now = 1_000;
    expect(b.state).toBe('half-open');
    expect(b.tryAcquire()).toBe(true);
    expect(b.tryAcquire()).toBe(false);
    b.succeeded();
    expect(b.state).toBe('closed');
    expect(b.tryAcquire()).toBe(true);
  });

  it('a failed probe opens it again for twice as long, up to the maximum', () => {
    const { b, clock } = breaker();
    for (let i = 0; i < 3; i++) b.failed();
    let cooldown = 1_000;
    for (const next of [2_000, 4_000, 4_000]) {
      clock.now += cooldown;
      expect(b.tryAcquire()).toBe(true);
      b.failed();
      expect(b.reopensAt).toBe(clock.now + next);
      cooldown = next;
    }
  });

  it('a success after a failed probe resets the cool-down', () => {
    const { b, clock } = breaker();
    for (let i = 0; i < 3; i++) b.failed();
    clock.now = 1_000;
    b.tryAcquire();
    b.failed();
    clock.now = 3_000;
    b.tryAcquire();
    b.succeeded();
    for (let i = 0; i < 3; i++) b.failed();
    expect(b.reopensAt).toBe(4_000);
  });
});
