// Parses human durations such as "72h", "7d", "10s", "250ms" into milliseconds: the one syntax every
// duration variable and option accepts (a bare number, the older form of the *_MS variables, is milliseconds).

const UNIT_MS: Record<string, number> = {
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};

const DURATION = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/;
const MILLISECONDS = /^\d+$/;

/** Returns the duration in milliseconds, or undefined when the text is not a duration. */
export function parseDuration(text: string): number | undefined {
  const match = DURATION.exec(text.trim());
  if (!match) return undefined;
  const [, amount, unit] = match;
  return Math.round(Number(amount) * UNIT_MS[unit!]!);
}

/** A duration (`250ms`, `10s`, `7d`) or a bare whole number of milliseconds (`10000`); else undefined. */
export function parseDurationOrMs(text: string): number | undefined {
  const trimmed = text.trim();
  return MILLISECONDS.test(trimmed) ? Number(trimmed) : parseDuration(trimmed);
}

/** The shortest exact form of a duration, for messages: 259200000 -> "72h". */
export function formatDuration(ms: number): string {
  for (const unit of ['d', 'h', 'm', 's'] as const) {
    const size = UNIT_MS[unit]!;
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}
