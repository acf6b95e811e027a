// `hookledger redrive --reason` takes only the reasons the router dead-letters for, and says which they are.
import { describe, expect, it } from 'vitest';
import { DLQ_REASONS } from '../../../processors/dedupe-router/dead-letter.js';
import { UsageError } from '../../../tools/cli/command.js';
import { command, runRedriveCommand } from '../../../tools/cli/commands/redrive.js';
import { runCliInProcess } from '../../helpers/cli-in-process.js';

// No Kafka anywhere: a reason is refused before anything is configured or connected.
const io = { stdout: { write: () => true }, stderr: { write: () => true }, env: {} };

describe('hookledger redrive --reason', () => {
  it('refuses a reason no dead letter has, naming every valid one', async () => {
    const refused = runRedriveCommand(['--reason', 'record-invalid', '--reason', 'bogus-reason'], io);
    await expect(refused).rejects.toThrow(UsageError);
    const message = await refused.catch((error: Error) => error.message);
    expect(message).toContain('"bogus-reason"');
    expect(message).not.toContain('"record-invalid"');
    for (const reason of DLQ_REASONS) expect(message).toContain(reason);
  });

  it('answers an unknown reason in one line with exit code 2', async () => {
    const result = await runCliInProcess(['redrive', '--reason', 'bogus-reason']);
    expect(result.status).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(/^hookledger: --reason: unknown reason "bogus-reason" \(.*record-invalid.*\)$/),
    ]);
  });

  it('lists every reason in its help', () => {
    const reasons = command.help.slice(command.help.indexOf('\nreasons'));
    for (const reason of DLQ_REASONS) expect(reasons).toMatch(new RegExp(`\\b${reason}\\b`));
  });
});
