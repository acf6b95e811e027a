// The README's "A five-minute tour" block as steps: the command as a person copies it (continuation
// lines joined, the comment cut off) and the comment that says what it shows. Read by the tour test,
// so the README and the test cannot drift apart.

export interface TourStep {
  /** The command as written, `\`-continued lines joined with one space. */
  command: string;
  /** The comment after it and on the comment-only lines below it, joined with one space. */
  comment: string;
  /** 1 for what the README runs in terminal 1 (`start`), else 2. */
  terminal: 1 | 2;
}

const TOUR_HEADING = '## A five-minute tour';

/** The lines of the first ```sh block under the tour's heading. */
export function tourBlock(readme: string): string[] {
  const at = readme.indexOf(TOUR_HEADING);
  if (at < 0) throw new Error(`README.md has no "${TOUR_HEADING}" section`);
  const rest = readme.slice(at).split('\n');
  const open = rest.findIndex((line) => line.trim() === '```sh');
  const close = rest.findIndex((line, i) => i > open && line.trim() === '```');
  if (open < 0 || close < 0) throw new Error('the tour has no ```sh block');
  return rest.slice(open + 1, close);
}

/** A command and its comment: the comment starts at the first ` #` (tour commands hold no `#`). */
function split(line: string): { code: string; comment: string } {
  const at = line.search(/\s#(\s|$)/);
  if (at < 0) return { code: line.trim(), comment: '' };
  return { code: line.slice(0, at).trim(), comment: line.slice(at).trim().replace(/^#\s*/, '') };
}

export function tourSteps(readme: string): TourStep[] {
  const steps: { command: string; comments: string[] }[] = [];
  let continued: string | undefined;
  for (const line of tourBlock(readme)) {
    if (line.trim() === '') continue;
    if (continued === undefined && /^\s*#/.test(line)) {
      // A comment-only line goes on with the comment of the command above it.
      const last = steps.at(-1);
      if (last === undefined) throw new Error(`the tour starts with a comment: ${line}`);
      last.comments.push(line.trim().replace(/^#\s*/, ''));
      continue;
    }
    const { code, comment } = split(line);
    const joined = continued === undefined ? code : `${continued} ${code}`;
    if (joined.endsWith('\\')) {
      continued = joined.slice(0, -1).trim();
      if (comment !== '') throw new Error(`a comment before a line continuation: ${line}`);
      continue;
    }
    continued = undefined;
    steps.push({ command: joined, comments: comment === '' ? [] : [comment] });
  }
  if (continued !== undefined) throw new Error('the tour ends in a line continuation');
  return steps.map(({ command, comments }) => {
    const comment = comments.join(' ');
    return { command, comment, terminal: /\bterminal 1\b/.test(comment) ? 1 : 2 };
  });
}

/** The count a comment starts with (`# 300: the 60 retries are gone`), for a `| wc -l` step. */
export function leadingCount(comment: string): number | undefined {
  const m = /^(\d+)\b/.exec(comment);
  return m === null ? undefined : Number(m[1]);
}
