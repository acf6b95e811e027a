import { describe, expect, it } from 'vitest';
import { isAlreadyExists, registerOrFindExisting } from '../../../schemas/register-existing.js';

/** What the registry client throws for an HTTP error: the status, and the registry's message. */
function responseError(status: number, message: string): Error {
  return Object.assign(new Error(`hookledger - ${message}`), { status });
}

const alreadyExists = () =>
  responseError(409, "An artifact with ID 'webhooks.raw-value' in group 'null' already exists.");

/** A fake registry: each call takes the next scripted answer (a value resolves, an Error rejects). */
function scripted<T>(answers: (T | Error)[]) {
  const calls = { count: 0 };
  const next = async (): Promise<T> => {
    const answer = answers[calls.count++];
    if (answer instanceof Error) throw answer;
    return answer as T;
  };
  return { next, calls };
}

function recordSleeps() {
  const delays: number[] = [];
  return { delays, sleep: async (ms: number) => void delays.push(ms) };
}

describe('registering a schema the subject already holds', () => {
  it('takes the id a lookup finds when the registry answers "already exists"', async () => {
    const register = scripted<number>([alreadyExists()]);
    const lookup = scripted<number | undefined>([7]);
    const id = await registerOrFindExisting('webhooks.raw-value', {
      register: register.next,
      lookup: lookup.next,
    });
    expect(id).toBe(7);
    expect(register.calls.count).toBe(1);
  });

  it('waits and registers again while the registry does not list the schema yet (still reading its storage)', async () => {
    const register = scripted<number>([alreadyExists(), alreadyExists(), 7]);
    const lookup = scripted<number | undefined>([undefined, undefined]);
    const { delays, sleep } = recordSleeps();
    const id = await registerOrFindExisting(
      'webhooks.raw-value',
      { register: register.next, lookup: lookup.next },
      { initialDelayMs: 100, sleep },
    );
    expect(id).toBe(7);
    expect(delays).toEqual([100, 200]);
  });

  it('gives up after the bounded attempts with one line naming the subject', async () => {
    const register = scripted<number>([alreadyExists(), alreadyExists(), alreadyExists()]);
    const lookup = scripted<number | undefined>([undefined, undefined, undefined]);
    const { delays, sleep } = recordSleeps();
    await expect(
      registerOrFindExisting(
        'webhooks.raw-value',
        { register: register.next, lookup: lookup.next },
        { attempts: 3, initialDelayMs: 10, sleep },
      ),
    ).rejects.toThrow(
      /^schema subject "webhooks.raw-value": the registry says it already exists.*\(3 attempts\)/,
    );
    expect(register.calls.count).toBe(3);
    expect(delays).toEqual([10, 20]);
  });

  it('passes any other refusal on at once, an incompatible schema (also 409) included', async () => {
    const incompatible = responseError(409, 'Schema being registered is incompatible with an earlier schema');
    const register = scripted<number>([incompatible]);
    const lookup = scripted<number | undefined>([]);
    await expect(
      registerOrFindExisting('webhooks.raw-value', { register: register.next, lookup: lookup.next }),
    ).rejects.toBe(incompatible);
    expect(lookup.calls.count).toBe(0);
  });

  it('passes a failing lookup on', async () => {
    const down = responseError(503, 'Service Unavailable');
    const register = scripted<number>([alreadyExists()]);
    const lookup = scripted<number | undefined>([down]);
    await expect(
      registerOrFindExisting('webhooks.raw-value', { register: register.next, lookup: lookup.next }),
    ).rejects.toBe(down);
  });
});

describe('isAlreadyExists', () => {
  it('is a 409 whose message says the subject already exists, nothing else', () => {
    expect(isAlreadyExists(alreadyExists())).toBe(true);
    expect(isAlreadyExists(responseError(409, 'incompatible with an earlier schema'))).toBe(false);
    expect(isAlreadyExists(responseError(500, 'already exists'))).toBe(false);
    expect(isAlreadyExists(new Error('already exists'))).toBe(false);
    expect(isAlreadyExists(undefined)).toBe(false);
  });
});
