import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { leadingCount, tourSteps } from '../helpers/readme-tour.js';

const README = readFileSync(resolve(import.meta.dirname, '../../README.md'), 'utf8');

function readme(block: string): string {
  return `# x\n\n## A five-minute tour\n\n\`\`\`sh\n${block}\n\`\`\`\n\nmore\n`;
}

describe("the README tour's parser", () => {
  it('joins continued lines, cuts comments off and gathers comment-only lines into the step above', () => {
    const steps = tourSteps(
      readme(
        [
          'npx hookledger start          # terminal 1: leave it running',
          'npx hookledger simulate --url http://x --key <key> \\',
          '    --count 3',
          '                               # terminal 2: three webhooks.',
          '                               # It ends with "sent 3"',
          'npx hookledger tail t | wc -l  # 3: all of them',
        ].join('\n'),
      ),
    );
    expect(steps).toEqual([
      { command: 'npx hookledger start', comment: 'terminal 1: leave it running', terminal: 1 },
      {
        command: 'npx hookledger simulate --url http://x --key <key> --count 3',
        comment: 'terminal 2: three webhooks. It ends with "sent 3"',
        terminal: 2,
      },
      { command: 'npx hookledger tail t | wc -l', comment: '3: all of them', terminal: 2 },
    ]);
  });

  it('reads the count a comment promises', () => {
    expect(leadingCount('300: the 60 retries are gone')).toBe(300);
    expect(leadingCount('the current state')).toBeUndefined();
  });

  it('refuses a tour it cannot read rather than run half of it', () => {
    expect(() => tourSteps('# no tour here')).toThrow(/no "## A five-minute tour"/);
    expect(() => tourSteps(readme('# a comment first\nnpx hookledger start'))).toThrow(
      /starts with a comment/,
    );
    expect(() => tourSteps(readme('npx hookledger simulate \\'))).toThrow(/line continuation/);
  });

  it("reads README.md's tour: npx commands, start in terminal 1 first and again with the fix", () => {
    const steps = tourSteps(README);
    expect(steps.length).toBeGreaterThan(5);
    for (const step of steps) expect(step.command).toMatch(/^([A-Z_]+=\S+ )*npx hookledger /);
    const starts = steps.filter((s) => s.terminal === 1);
    expect(starts[0]).toBe(steps[0]);
    expect(starts.map((s) => s.command)).toEqual([
      'npx hookledger start',
      'WEBHOOK_DATE_ZONE=UTC npx hookledger start',
    ]);
  });
});
