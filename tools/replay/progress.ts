// Progress of a long run (replay, replay diff, redrive): a bar with rate and ETA on a terminal, a log line
// now and then otherwise.

export interface ProgressSample {
  label: string;
  /** Offsets passed and in all (a transactional source also has markers, so offsets, not records). */
  done: bigint;
  total: bigint;
  /** Records read so far, when the stage counts them: what the summary reports at the end. */
  read?: number;
  /** Further counts shown after `read`, in order (redrive: `[['sent', 120]]`). */
  counts?: readonly (readonly [label: string, n: number])[];
  elapsedMs: number;
}

function duration(seconds: number): string {
  if (!Number.isFinite(seconds)) return '?';
  const s = Math.max(0, Math.round(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const rest = String(s % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${rest}` : `${m}:${rest}`;
}

/** Records per second over the run, and seconds left at that rate (Infinity when nothing moved yet). */
export function rateAndEta({ done, total, elapsedMs }: ProgressSample): { rate: number; etaSeconds: number } {
  const rate = elapsedMs > 0 ? (Number(done) * 1000) / elapsedMs : 0;
  const left = Number(total - done);
  return { rate, etaSeconds: left <= 0 ? 0 : rate > 0 ? left / rate : Number.POSITIVE_INFINITY };
}

const percent = (done: bigint, total: bigint) => (total === 0n ? 100 : Number((done * 1000n) / total) / 10);

/** The further counts, each led by `separator`. */
const countsOf = (sample: ProgressSample, separator: string) =>
  (sample.counts ?? []).map(([label, n]) => `${separator}${n} ${label}`).join('');

/** `dedupe-router [#########...........] 45.0% 12345/27000 · 12001 read · 1234/s · ETA 0:12` */
export function progressBar(sample: ProgressSample, width = 24): string {
  const pct = percent(sample.done, sample.total);
  const filled = Math.round((pct / 100) * width);
  const { rate, etaSeconds } = rateAndEta(sample);
  const read = sample.read === undefined ? '' : ` · ${sample.read} read`;
  const counts = countsOf(sample, ' · ');
  return `${sample.label} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${pct.toFixed(1)}% ${sample.done}/${sample.total}${read}${counts} · ${Math.round(rate)}/s · ETA ${duration(etaSeconds)}`;
}

/**
 * `replay 20261122-160501: dedupe-router 45.0% (12345 of 27000 offsets, 12001 records read), 1234 offsets/s, ETA 0:12`
 * (offsets: a transactional source also has markers); `title` names the run (`replay <id>`, `redrive <run id>`).
 */
export function progressLine(title: string, sample: ProgressSample): string {
  const { rate, etaSeconds } = rateAndEta(sample);
  const read = sample.read === undefined ? '' : `, ${sample.read} records read`;
  const counts = countsOf(sample, ', ');
  return `${title}: ${sample.label} ${percent(sample.done, sample.total).toFixed(1)}% (${sample.done} of ${sample.total} offsets${read}${counts}), ${Math.round(rate)} offsets/s, ETA ${duration(etaSeconds)}`;
}

export interface ProgressReporter {
  update(sample: ProgressSample): void;
  /** Ends the bar's line (a terminal) before anything else is printed. */
  end(): void;
}

/** On a terminal, rewrites one line per update; otherwise writes a line every `everyMs`, led by `title`. */
export function progressReporter(
  title: string,
  out: { write(text: string): unknown; isTTY?: boolean },
  everyMs = 10_000,
  now: () => number = Date.now,
): ProgressReporter {
  let last = 0;
  let drawn = false;
  const latest = new Map<string, ProgressSample>();
  return {
    update(sample) {
      latest.set(sample.label, sample);
      if (out.isTTY) {
        out.write(`\r\u001b[2K${[...latest.values()].map((s) => progressBar(s)).join('  ')}`);
        drawn = true;
      } else if (now() - last >= everyMs) {
        last = now();
        out.write(`${progressLine(title, sample)}\n`);
      }
    },
    end() {
      if (drawn) out.write('\n');
      drawn = false;
    },
  };
}
