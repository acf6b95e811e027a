#!/usr/bin/env node
// The `hookledger` command: runs the TypeScript sources through tsx's loader, so a checkout needs no
// build step after `npm ci`. The production image runs the compiled dist/tools/cli/main.js instead.
import { register } from 'tsx/esm/api';

register();
await import('./main.ts');
