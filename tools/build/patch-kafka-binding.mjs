#!/usr/bin/env node
// npm's postinstall: applies hookledger's patch to the Kafka client's native binding (its message
// conversion, see kafka-javascript-<version>.patch beside this file) and rebuilds the addon, when
// the binding was built from source (CKJS_LINKING=dynamic npm ci, as on machines that cannot download
// its prebuilt binary). The addon alone is recompiled, not librdkafka: about 8 seconds.
//
// Without the patch everything works the same, with more CPU per record (a changelog restore about
// 1.6×). So whatever stops it (another version of the binding, a prebuilt one, no `patch` program, a
// patch that does not apply or build) leaves the binding as published, with a line saying why; the
// install goes on. CI checks that it was applied: .ci/run looks for the stamp written below, and
// test/integration/kafka-binding-batch.test.ts fails on an unpatched binding.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const say = (line) => console.error(`hookledger postinstall: ${line}`);
const UNPATCHED =
  "the Kafka client's binding stays as published (it works the same, with more CPU per record)";

function bindingDir() {
  try {
    return dirname(createRequire(import.meta.url).resolve('@confluentinc/kafka-javascript/package.json'));
  } catch {
    return undefined; // installed without its dependencies (npm ci --omit …): nothing to patch
  }
}

/** npm's own node-gyp: npm names it to install scripts; else the copy beside npm. */
function nodeGyp() {
  const candidates = [
    process.env.npm_config_node_gyp,
    join(dirname(process.execPath), '../lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js'),
  ];
  return candidates.find((path) => path !== undefined && path !== '' && existsSync(path));
}

/** Recompiles the addon from the binding's build directory (its Makefile already configured). */
function rebuild(dir) {
  const gyp = nodeGyp();
  if (gyp === undefined) return { status: 1, stdout: '', stderr: 'node-gyp not found (npm bundles it)' };
  say('rebuilding the Kafka client binding with its patch (tools/build/kafka-javascript-*.patch)');
  // Its compiler warnings are the upstream sources' own: shown only when the build fails.
  return spawnSync(process.execPath, [gyp, 'build', '--jobs', 'max'], {
    cwd: dir,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
}

function main() {
  const dir = bindingDir();
  if (dir === undefined) return;
  const { version } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  const patchFile = join(here, `kafka-javascript-${version}.patch`);
  if (!existsSync(patchFile)) {
    say(`no patch for @confluentinc/kafka-javascript ${version}: its binding stays as it is`);
    return;
  }
  if (!existsSync(join(dir, 'build', 'Makefile'))) {
    say('the Kafka client uses its prebuilt binary: not patched (a source build gets the faster conversion)');
    return;
  }
  const patch = readFileSync(patchFile);
  const digest = createHash('sha256').update(patch).digest('hex');
  const stamp = join(dir, 'build', 'Release', '.hookledger-patch');
  if (existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === digest) return; // patched and built

  const patchArgs = ['-p1', '--forward', '--silent', '-d', dir, '-i', patchFile];
  const alreadyPatched = readFileSync(join(dir, 'src', 'common.cc'), 'utf8').includes(
    'BatchBytes::BatchBytes',
  );
  if (!alreadyPatched) {
    const dryRun = spawnSync('patch', [...patchArgs, '--dry-run'], { encoding: 'utf8' });
    if (dryRun.error !== undefined) {
      say(`the \`patch\` program is missing (${dryRun.error.message}): ${UNPATCHED}`);
      return;
    }
    if (dryRun.status !== 0) {
      say(`${patchFile} does not apply to ${dir}: ${UNPATCHED}\n${dryRun.stdout}${dryRun.stderr}`);
      return;
    }
    const done = spawnSync('patch', patchArgs, { encoding: 'utf8' });
    if (done.status !== 0) {
      say(`patch failed on ${dir} (exit ${done.status}): ${UNPATCHED}\n${done.stdout}${done.stderr}`);
      return;
    }
  }
  const built = rebuild(dir);
  if (built.status !== 0) {
    // The addon built before is still in place (make stops before linking); the sources go back to what
    // it was built from, so a later rebuild makes the same addon.
    spawnSync('patch', [...patchArgs.filter((arg) => arg !== '--forward'), '--reverse'], {
      encoding: 'utf8',
    });
    const output = `${built.stdout}${built.stderr}`.trim().split('\n').slice(-20).join('\n');
    say(`the patched binding did not build (exit ${built.status}): ${UNPATCHED}\n${output}`);
    return;
  }
  writeFileSync(stamp, `${digest}\n`);
}

main();
