// The README stays a front page (issue 21: at most 12 KB), and every link it and the docs give into the
// repository leads somewhere: the file exists and, where the link names a section, the file has that heading.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const README = readFileSync(resolve(ROOT, 'README.md'), 'utf8');

/** GitHub's anchor of a heading: lower case, punctuation dropped but hyphens, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/`/g, '')
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const heading = !fenced && /^#{1,6}\s+(.*)$/.exec(line);
    if (heading) anchors.add(slug(heading[1]!));
  }
  return anchors;
}

/** Relative links of a markdown text: `[text](path#anchor)`, outside code blocks. */
function relativeLinks(markdown: string): { path: string; anchor?: string }[] {
  const links: { path: string; anchor?: string }[] = [];
  for (const [, target] of markdown.matchAll(/\]\(([^)\s]+)\)/g)) {
    if (/^[a-z]+:/i.test(target!)) continue; // http:, https:, mailto:
    const [path, anchor] = target!.split('#');
    links.push(anchor === undefined ? { path: path! } : { path: path!, anchor });
  }
  return links;
}

/** Every relative link of a markdown file leads to a file that exists, and to a heading it has. */
function expectLinksLead(from: string): void {
  const broken: string[] = [];
  for (const { path, anchor } of relativeLinks(readFileSync(from, 'utf8'))) {
    const file = path === '' ? from : resolve(dirname(from), path);
    if (!existsSync(file)) broken.push(`${path}: no such file`);
    else if (
      anchor !== undefined &&
      file.endsWith('.md') &&
      !anchorsOf(readFileSync(file, 'utf8')).has(anchor)
    )
      broken.push(`${path}#${anchor}: no such heading`);
  }
  expect(broken, `broken links in ${relative(ROOT, from)}`).toEqual([]);
}

describe('the README', () => {
  it('is at most 12 KB', () => {
    expect(Buffer.byteLength(README, 'utf8')).toBeLessThanOrEqual(12 * 1024);
  });

  it('links only to files that exist, and to sections those files have', () => {
    expect(relativeLinks(README).length).toBeGreaterThan(10);
    expectLinksLead(resolve(ROOT, 'README.md'));
  });

  it('links every page of docs/, so each is one click away', () => {
    const linked = new Set(relativeLinks(README).map((l) => resolve(ROOT, l.path)));
    const pages = readdirSync(resolve(ROOT, 'docs')).filter((f) => f.endsWith('.md'));
    expect(pages.length).toBeGreaterThan(5);
    for (const page of pages) expect(linked, `docs/${page}`).toContain(resolve(ROOT, 'docs', page));
  });
});

describe('the docs pages', () => {
  const pages = readdirSync(resolve(ROOT, 'docs')).filter((f) => f.endsWith('.md'));

  it.each(pages)('docs/%s links only to files that exist, and to sections those files have', (page) => {
    expectLinksLead(resolve(ROOT, 'docs', page));
  });
});
