#!/usr/bin/env node
// The `hookledger` command. In a checkout (the TypeScript sources beside this file) it runs them through
// tsx's loader, so no build step is needed after `npm ci`; in the npm package and the image, which hold
// no sources, it runs the compiled dist/tools/cli/main.js (`npm run build`). HOOKLEDGER_COMPILED=1 runs
// the compiled files from a checkout too (after `npm run build`), as the package would.
import { existsSync } from 'node:fs';

const sources = new URL('./main.ts', import.meta.url);
const compiled = new URL('../../dist/tools/cli/main.js', import.meta.url);

/** tsx's loader, a development dependency: absent after `npm ci --omit=dev`. */
async function tsxLoader() {
  try {
    return await import('tsx/esm/api');
  } catch {
    return undefined;
  }
}

const useSources = existsSync(sources) && process.env.HOOKLEDGER_COMPILED !== '1';
const loader = useSources ? await tsxLoader() : undefined;
if (loader) {
  loader.register();
  await import(sources.href);
} else if (existsSync(compiled)) {
  await import(compiled.href);
} else {
  console.error(
    useSources
      ? 'hookledger: tsx (a development dependency) is not installed: run `npm ci`, or `npm run build` to run the compiled files'
      : 'hookledger: dist/tools/cli/main.js is missing: run `npm run build` first',
  );
  process.exitCode = 1;
}
