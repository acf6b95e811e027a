// Writes one benchmark's Markdown section into docs/benchmarks.md, between its own markers, leaving
// the other benchmarks' sections as they are.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './children.js';

/** Replaces the section between `<!-- bench:<name>:start -->` and its end marker, or appends it. */
export function writeSection(name: string, section: string): void {
  const file = join(ROOT, 'docs/benchmarks.md');
  const start = `<!-- bench:${name}:start -->`;
  const end = `<!-- bench:${name}:end -->`;
  const block = `${start}\n${section}\n${end}`;
  let text = existsSync(file)
    ? readFileSync(file, 'utf8')
    : '# Benchmarks\n\nFigures measured on the machine named in each section, with the command that reproduces them.\n';
  if (text.includes(start) && text.includes(end)) {
    text = text.slice(0, text.indexOf(start)) + block + text.slice(text.indexOf(end) + end.length);
  } else {
    text = `${text.trimEnd()}\n\n${block}\n`;
  }
  writeFileSync(file, text.endsWith('\n') ? text : `${text}\n`);
}
