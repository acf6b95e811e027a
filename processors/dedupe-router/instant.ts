// Parses ISO 8601 / RFC 3339 date-times into epoch milliseconds, strictly: ordering decisions
// (routing, table merges) must not depend on the machine's time zone or on Date.parse's leniency.

// A zone is required unless the caller names one: a local time would otherwise be read in the
// processor's own time zone, and a replay on another machine could then order events differently.
// The offset may be ±hh:mm, ±hhmm or ±hh: the contract's dates are ISO 8601, which writes a whole-hour
// offset as ±hh, and refusing one would dead-letter a delivery the contract allows.
const DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?)?$/;

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
  const offsetHours = Number(zh);
  const offsetMinutes = Number(zm);
  if (offsetHours > 23 || offsetMinutes > 59) return undefined;
  const offset = zoneless
    ? zonelessOffsetMinutes!
    : z !== undefined
      ? 0
      : (sign === '-' ? -1 : 1) * (offsetHours * 60 + offsetMinutes);
  return instant(
    Number(y),
    Number(mo),
    Number(d),
    Number(h),
    Number(mi),
    Number(s),
    Number(frac.slice(0, 3).padEnd(3, '0')),
    offset,
  );
}

function digit(bytes: Uint8Array, at: number): number {
  const c = bytes[at]! - 0x30;
  return c >= 0 && c <= 9 ? c : Number.NaN;
}

function two(bytes: Uint8Array, at: number): number {
  return digit(bytes, at) * 10 + digit(bytes, at + 1);
}

/** The other forms: parseInstant of the bytes as text (a plain function: a closure made per call cost more than the parse). */
function asText(
  bytes: Buffer,
  start: number,
  end: number,
  zonelessOffsetMinutes?: number,
): number | undefined {
  return parseInstant(bytes.toString('latin1', start, end), zonelessOffsetMinutes);
}

/**
 * parseInstant of the ASCII text `bytes[start, end)`, read from the bytes in its common form
 * (`2026-11-20T10:15:30`, an optional fraction, then `Z` or `±hh:mm`) without a string or a regular
 * expression; any other form goes to parseInstant as text. The same answer either way.
 */
export function parseInstantBytes(
  bytes: Buffer,
  start: number,
  end: number,
  zonelessOffsetMinutes?: number,
): number | undefined {
  if (end - start < 20) return asText(bytes, start, end, zonelessOffsetMinutes);
  const b = start;
  const t = bytes[b + 10];
  if (bytes[b + 4] !== 0x2d || bytes[b + 7] !== 0x2d || (t !== 0x54 && t !== 0x74))
    return asText(bytes, start, end, zonelessOffsetMinutes);
  if (bytes[b + 13] !== 0x3a || bytes[b + 16] !== 0x3a)
    return asText(bytes, start, end, zonelessOffsetMinutes);
  const year = two(bytes, b) * 100 + two(bytes, b + 2);
  const month = two(bytes, b + 5);
  const day = two(bytes, b + 8);
  const hour = two(bytes, b + 11);
  const minute = two(bytes, b + 14);
  const second = two(bytes, b + 17);
  // NaN when a digit is not one: the text's form is not this one.
  if (Number.isNaN(year + month + day + hour + minute + second))
    return asText(bytes, start, end, zonelessOffsetMinutes);
  let at = b + 19;
  let millis = 0;
  const separator = bytes[at];
  if (separator === 0x2e || separator === 0x2c) {
    at++;
    const first = at;
    // The first three digits count (truncated), the rest must be digits.
    while (at < end && !Number.isNaN(digit(bytes, at))) {
      if (at - first < 3) millis += digit(bytes, at) * (at - first === 0 ? 100 : at - first === 1 ? 10 : 1);
      at++;
    }
    if (at === first) return asText(bytes, start, end, zonelessOffsetMinutes);
  }
  let offset: number;
  const zone = bytes[at];
  if ((zone === 0x5a || zone === 0x7a) && at + 1 === end) offset = 0;
  else if ((zone === 0x2b || zone === 0x2d) && at + 6 === end && bytes[at + 3] === 0x3a) {
    const offsetHours = two(bytes, at + 1);
    const offsetMinutes = two(bytes, at + 4);
    if (Number.isNaN(offsetHours + offsetMinutes)) return asText(bytes, start, end, zonelessOffsetMinutes);
    if (offsetHours > 23 || offsetMinutes > 59) return undefined;
    offset = (zone === 0x2d ? -1 : 1) * (offsetHours * 60 + offsetMinutes);
  } else return asText(bytes, start, end, zonelessOffsetMinutes);
  return instant(year, month, day, hour, minute, second, millis, offset);
}

/**
 * The instant of a date-time's parts, `offset` minutes east of UTC, or undefined when a part is out of
 * range. A second of 60 is a leap second: the last millisecond of that minute.
 */
function instant(
  year: number,
  month: number,
  day: number,
  hour: number,
  minute: number,
  second: number,
  fractionMillis: number,
  offset: number,
): number | undefined {
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  if (hour > 23 || minute > 59 || second > 60) return undefined;
  const millis = second === 60 ? 999 : fractionMillis;
  const ms = utcMillis(year, month, day, hour, minute, Math.min(second, 59), millis) - offset * 60_000;
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
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}
