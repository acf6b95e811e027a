// Reads a Java-style .properties file (what KAFKA_CONFIG_FILE holds, as Kafka's own client.properties).
// Pure: text in, ordered key/value pairs out, with the line each came from.

export interface PropertyLine {
  key: string;
  value: string;
  /** 1-based, for messages that name where a bad property is. */
  line: number;
}

/**
 * The subset of java.util.Properties people write by hand: `key=value`, `key: value` or `key value`;
 * `#` and `!` comments; a line ending in an odd number of backslashes continues on the next; `\t`, `\n`,
 * `\\` and friends in keys and values. A key alone has the empty value, as in Java.
 */
export function parseJavaProperties(text: string): PropertyLine[] {
  const physical = text.split(/\r\n|\r|\n/);
  const entries: PropertyLine[] = [];
  for (let i = 0; i < physical.length; i++) {
    const start = i + 1;
    let logical = physical[i]!.replace(/^[ \t\f]+/, '');
    if (logical === '' || logical.startsWith('#') || logical.startsWith('!')) continue;
    while (endsWithContinuation(logical) && i + 1 < physical.length) {
      logical = logical.slice(0, -1) + physical[++i]!.replace(/^[ \t\f]+/, '');
    }
    if (endsWithContinuation(logical)) logical = logical.slice(0, -1);
    const { key, rest } = splitKey(logical);
    entries.push({ key: unescapeJava(key), value: unescapeJava(rest), line: start });
  }
  return entries;
}

function endsWithContinuation(line: string): boolean {
  const trailing = /\\*$/.exec(line)![0].length;
  return trailing % 2 === 1;
}

/** The key ends at the first unescaped `=`, `:` or whitespace; the separator and blanks around it go. */
function splitKey(line: string): { key: string; rest: string } {
  let i = 0;
  while (i < line.length) {
    const c = line[i]!;
    if (c === '\\') {
      i += 2;
      continue;
    }
    if (c === '=' || c === ':' || c === ' ' || c === '\t' || c === '\f') break;
    i++;
  }
  const key = line.slice(0, i);
  const rest = line
    .slice(i)
    .replace(/^[ \t\f]*[=:]?/, '')
    .replace(/^[ \t\f]+/, '');
  return { key, rest };
}

const ESCAPES: Readonly<Record<string, string>> = { t: '\t', n: '\n', r: '\r', f: '\f' };

function unescapeJava(text: string): string {
  return text.replace(/\\(u[0-9a-fA-F]{4}|.)/g, (_, escaped: string) => {
    if (escaped.length === 5) return String.fromCharCode(Number.parseInt(escaped.slice(1), 16));
    return ESCAPES[escaped] ?? escaped;
  });
}
