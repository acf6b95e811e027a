import { describe, expect, it } from 'vitest';
import { settingsStartIgnores } from '../../../../tools/cli/start/one-of-each.js';

describe('the settings hookledger start leaves aside', () => {
  it('are none by default', () => {
    expect(settingsStartIgnores({ INGEST_WORKERS: 1, PROCESSOR_THREADS: 1 })).toBeUndefined();
  });

  it('are named with the command each belongs to', () => {
    expect(settingsStartIgnores({ INGEST_WORKERS: 2, PROCESSOR_THREADS: 1 })).toBe(
      'start runs one ingest and one stream thread in its own process: INGEST_WORKERS=2 is for `hookledger ingest`',
    );
    expect(settingsStartIgnores({ INGEST_WORKERS: 4, PROCESSOR_THREADS: 2 })).toBe(
      'start runs one ingest and one stream thread in its own process: INGEST_WORKERS=4 is for `hookledger ingest`, PROCESSOR_THREADS=2 is for `hookledger process`',
    );
  });
});
