// Which fields a GraphQL query asks for: the dotted leaf paths of its record branch, the unit the
// enrich stage compares a delivery's `fields` against. A small reader of the query syntax the
// recommended queries use (fields, aliases, arguments, inline fragments), not a GraphQL validator.

interface Field {
  /** The response key: the alias when there is one. */
  readonly key: string;
  /** Set for an inline fragment (`... on EnergySwitch { … }`). */
  readonly onType?: string;
  readonly selections?: readonly Field[];
}

const TOKEN =
  /\s+|,|#[^\n]*|"(?:[^"\\]|\\.)*"|\.\.\.|[_A-Za-z][_0-9A-Za-z]*|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|[{}():$!=@[\]]/y;

function tokenize(text: string): string[] {
  const tokens: string[] = [];
  TOKEN.lastIndex = 0;
  while (TOKEN.lastIndex < text.length) {
    const at = TOKEN.lastIndex;
    const match = TOKEN.exec(text);
    if (match === null) throw new SyntaxError(`unexpected ${JSON.stringify(text[at])} at ${at}`);
    const token = match[0];
    if (/^\s/.test(token) || token === ',' || token.startsWith('#')) continue;
    tokens.push(token);
  }
  return tokens;
}

class Reader {
  #at = 0;
  constructor(private readonly tokens: readonly string[]) {}

  peek(): string | undefined {
    return this.tokens[this.#at];
  }

  next(): string {
    const token = this.tokens[this.#at++];
    if (token === undefined) throw new SyntaxError('the query ends too early');
    return token;
  }

  expect(token: string): void {
    const found = this.next();
    if (found !== token) throw new SyntaxError(`expected ${token}, found ${found}`);
  }

  /** Skips a balanced (…) group: arguments and variable definitions are not needed. */
  skipGroup(): void {
    let depth = 0;
    do {
      const token = this.next();
      if (token === '(') depth++;
      else if (token === ')') depth--;
    } while (depth > 0);
  }

  /** Skips directives (`@include(if: $x)`). */
  skipDirectives(): void {
    while (this.peek() === '@') {
      this.next();
      this.next();
      if (this.peek() === '(') this.skipGroup();
    }
  }

  selectionSet(): Field[] {
    this.expect('{');
    const fields: Field[] = [];
    while (this.peek() !== '}') fields.push(this.selection());
    this.expect('}');
    return fields;
  }

  selection(): Field {
    if (this.peek() === '...') {
      this.next();
      if (this.peek() !== 'on')
        throw new SyntaxError('named fragments are not supported: use an inline fragment');
      this.next();
      const onType = this.next();
      this.skipDirectives();
      return { key: '', onType, selections: this.selectionSet() };
    }
    const key = this.next();
    if (this.peek() === ':') {
      this.next();
      this.next();
    }
    if (!/^[_A-Za-z]/.test(key)) throw new SyntaxError(`expected a field name, found ${key}`);
    if (this.peek() === '(') this.skipGroup();
    this.skipDirectives();
    if (this.peek() === '{') return { key, selections: this.selectionSet() };
    return { key };
  }
}

/** The parts of a query the enrich stage needs. */
export interface QueryShape {
  /** The root field's response key, e.g. `getEnergySwitch`. */
  readonly rootField: string;
  /** Dotted leaf paths of the record (the `... on <type>` branch, else the root field's own fields). */
  readonly paths: readonly string[];
}

/**
 * Reads the query's single operation: its root field and the leaf paths of `recordType`'s branch
 * (`__typename` left out, as in an entity event's `fields`). Throws a SyntaxError saying what it met.
 */
export function readQueryShape(query: string, recordType = 'EnergySwitch'): QueryShape {
  const reader = new Reader(tokenize(query));
  // `query Name($id: ID!) @dir { … }` or a bare `{ … }`.
  if (reader.peek() !== '{') {
    const keyword = reader.next();
    if (keyword !== 'query') throw new SyntaxError(`expected a query operation, found ${keyword}`);
    if (reader.peek() !== undefined && /^[_A-Za-z]/.test(reader.peek()!)) reader.next();
    if (reader.peek() === '(') reader.skipGroup();
    reader.skipDirectives();
  }
  const roots = reader.selectionSet();
  if (reader.peek() !== undefined) throw new SyntaxError('only one operation is supported');
  const fields = roots.filter((f) => f.onType === undefined && !f.key.startsWith('__'));
  if (fields.length !== 1) throw new SyntaxError(`expected one root field, found ${fields.length}`);
  const root = fields[0]!;
  const selections = root.selections ?? [];
  const branch = selections.find((f) => f.onType === recordType)?.selections ?? selections;
  const paths: string[] = [];
  collect(branch, '', paths);
  if (paths.length === 0) throw new SyntaxError(`the query selects no field of ${recordType}`);
  return { rootField: root.key, paths };
}

function collect(fields: readonly Field[], prefix: string, out: string[]): void {
  for (const field of fields) {
    // A fragment on another type (OperationFailure) is not part of the record.
    if (field.onType !== undefined) continue;
    if (field.key === '__typename') continue;
    const path = prefix === '' ? field.key : `${prefix}.${field.key}`;
    if (field.selections === undefined) out.push(path);
    else collect(field.selections, path, out);
  }
}

/**
 * The paths of `wanted` a delivery did not carry. A carried ancestor counts (`commission` null
 * answers every `commission.*`), and so does a carried descendant (a path the query selects as a
 * leaf but the answer had as an object).
 */
export function missingPaths(carried: readonly string[], wanted: readonly string[]): string[] {
  const have = new Set(carried);
  const missing: string[] = [];
  for (const path of wanted) {
    if (have.has(path) || hasAncestor(have, path) || carried.some((c) => c.startsWith(`${path}.`))) continue;
    missing.push(path);
  }
  return missing;
}

function hasAncestor(have: ReadonlySet<string>, path: string): boolean {
  for (let dot = path.lastIndexOf('.'); dot > 0; dot = path.lastIndexOf('.', dot - 1))
    if (have.has(path.slice(0, dot))) return true;
  return false;
}
