// Parses ISO 8601 / RFC 3339 date-times into epoch milliseconds, strictly: ordering decisions
// (routing, table merges) must not depend on the machine's time zone or on Date.parse's leniency.

// A zone is required unless the caller names one: a local time would otherwise be read in the
// processor's own time zone, and a replay on another machine could then order events differently.
const DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?(?:([Zz])|([+-])(\d{2}):?(\d{2}))?$/;

/**
 * The instant a date-time names, in epoch milliseconds (fractions below a millisecond are
 * truncated), or undefined when the text is not a complete date-time with a zone. A date-time
 * without a zone is read at `zonelessOffsetMinutes` east of UTC when given (WEBHOOK_DATE_ZONE), and
 * refused when not.
 */
export function parseInstant(text: string, zonelessOffsetMinutes?: number): number | undefined {
  const m = DATE_TIME.exec(text);
  if (m === null) return undefined;
  const [, y, mo, d, h, mi, s = '0', frac = '', z, sign, zh = '0', zm = '0'] = m;
  const zoneless = z === undefined && sign === undefined;
  if (zoneless && zonelessOffsetMinutes === undefined) return undefined;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  const hour = Number(h);
  const minute = Number(mi);
  // 60 is a leap second: RFC 3339 allows it; it is read as the last millisecond of that minute.
  const second = Number(s);
  const offsetHours = Number(zh);
  const offsetMinutes = Number(zm);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  if (hour > 23 || minute > 59 || second > 60 || offsetHours > 23 || offsetMinutes > 59) return undefined;
  const millis = second === 60 ? 999 : Number(frac.slice(0, 3).padEnd(3, '0'));
  const offset = zoneless
    ? zonelessOffsetMinutes! * 60_000
    : z !== undefined
      ? 0
      : (sign === '-' ? -1 : 1) * (offsetHours * 60 + offsetMinutes) * 60_000;
  const ms = utcMillis(year, month, day, hour, minute, Math.min(second, 59), millis) - offset;
  return Number.isFinite(ms) ? ms : undefined;
}

function utcMillis(
  year: number,
  month: number,
  day: number,
  hour: number,
  minute: number,
  second: number,
  millis: number,
): number {
  // Date.UTC maps years 0–99 to 19xx; setUTCFullYear keeps them (and costs a Date object).
  if (year >= 100) return Date.UTC(year, month - 1, day, hour, minute, second, millis);
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, millis);
  return date.getTime();
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}
