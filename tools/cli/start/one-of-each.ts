// `hookledger start` runs ingest and the processors inside its own process, one of each: the settings that
// spread them over processes (`hookledger ingest --workers`, `hookledger process --threads`) do not apply.
import type { Config } from '../../../runtime/config.js';

/** A line saying which of those settings this start leaves aside, or undefined when none is set. */
export function settingsStartIgnores(
  config: Pick<Config, 'INGEST_WORKERS' | 'PROCESSOR_THREADS'>,
): string | undefined {
  const ignored: string[] = [];
  if (config.INGEST_WORKERS > 1)
    ignored.push(`INGEST_WORKERS=${config.INGEST_WORKERS} is for \`hookledger ingest\``);
  if (config.PROCESSOR_THREADS > 1)
    ignored.push(`PROCESSOR_THREADS=${config.PROCESSOR_THREADS} is for \`hookledger process\``);
  if (ignored.length === 0) return undefined;
  return `start runs one ingest and one stream thread in its own process: ${ignored.join(', ')}`;
}
