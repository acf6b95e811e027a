import { describe, expect, it } from 'vitest';
import { untilStopSignal } from '../../../tools/cli/command.js';

/** The listener untilStopSignal added last for `signal`, called as the process would (not emitted: the runner listens too). */
function deliver(signal: 'SIGINT' | 'SIGTERM'): void {
  const listener = process.listeners(signal).at(-1) as () => void;
  listener();
}

describe('untilStopSignal', () => {
  it.each(['SIGINT', 'SIGTERM'] as const)(
    'aborts the command’s signal on %s, and leaves no listener once it ends',
    async (name) => {
      const before = { SIGINT: process.listenerCount('SIGINT'), SIGTERM: process.listenerCount('SIGTERM') };
      const code = await untilStopSignal(async (signal) => {
        expect(signal.aborted).toBe(false);
        deliver(name);
        expect(signal.aborted).toBe(true);
        return 130;
      });
      expect(code).toBe(130);
      expect({ SIGINT: process.listenerCount('SIGINT'), SIGTERM: process.listenerCount('SIGTERM') }).toEqual(
        before,
      );
    },
  );

  it('removes its listeners when the command fails too', async () => {
    const before = process.listenerCount('SIGINT');
    await expect(untilStopSignal(async () => Promise.reject(new Error('refused')))).rejects.toThrow(
      'refused',
    );
    expect(process.listenerCount('SIGINT')).toBe(before);
  });
});
