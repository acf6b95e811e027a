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
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
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

/** Whether an addon was built with the patch: its symbols name the patch's class. */
function hasPatch(addon) {
  return existsSync(addon) && readFileSync(addon).includes('BatchBytes');
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

/**
 * Rebuilds the addon, the one there before kept aside and put back unless the new one holds the patch.
 * The two files the build links (Release and obj.target, hard links to one file) go first, so that make
 * links anew even when its objects are up to date (an addon copied over a patched build).
 */
function rebuildAddon(dir, addon) {
  const linked = join(dir, 'build', 'Release', 'obj.target', 'confluent-kafka-javascript.node');
  const aside = `${addon}.before-patch`;
  const hadAddon = existsSync(addon);
  if (hadAddon) renameSync(addon, aside);
  rmSync(linked, { force: true });
  const built = rebuild(dir);
  if (built.status === 0 && hasPatch(addon)) {
    rmSync(aside, { force: true });
    return built;
  }
  if (hadAddon) renameSync(aside, addon);
  return built.status === 0
    ? { status: 1, stdout: '', stderr: 'the rebuilt addon does not hold the patch' }
    : built;
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
  const addon = join(dir, 'build', 'Release', 'confluent-kafka-javascript.node');
  // The stamp names the patch the addon was built with: one edited since no longer matches it, and an
  // addon replaced since (a prebuilt one downloaded by `npm rebuild`) does not hold the patch.
  const stamp = join(dir, 'build', 'Release', '.hookledger-patch');
  const digest = `${createHash('sha256').update(readFileSync(patchFile)).digest('hex')}\n`;
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === digest && hasPatch(addon)) return; // patched, built

  const patchArgs = ['-p1', '--silent', '-d', dir, '-i', patchFile];
  const dryRun = (...extra) =>
    spawnSync('patch', [...patchArgs, '--dry-run', ...extra], { encoding: 'utf8' });
  const forward = dryRun('--forward');
  if (forward.error !== undefined) {
    say(`the \`patch\` program is missing (${forward.error.message}): ${UNPATCHED}`);
    return;
  }
  let appliedNow = false;
  if (forward.status === 0) {
    const done = spawnSync('patch', [...patchArgs, '--forward'], { encoding: 'utf8' });
    if (done.status !== 0) {
      say(`patch failed on ${dir} (exit ${done.status}): ${UNPATCHED}\n${done.stdout}${done.stderr}`);
      return;
    }
    appliedNow = true;
  } else if (dryRun('--reverse', '--force').status !== 0) {
    // Neither applicable nor applied as a whole: sources changed by hand, half-patched, or patched with an
    // earlier version of this patch. A fresh `npm ci` starts from the published sources.
    say(
      `${patchFile} neither applies to ${dir} nor is applied there: ${UNPATCHED}\n${forward.stdout}${forward.stderr}`,
    );
    return;
  }
  const built = rebuildAddon(dir, addon);
  if (built.status !== 0) {
    const output = `${built.stdout}${built.stderr}`.trim().split('\n').slice(-20).join('\n');
    say(`the patched binding did not build (exit ${built.status}): ${UNPATCHED}\n${output}`);
    if (appliedNow) {
      // The addon built before is back in place: the sources go back to what it was built from, so a
      // later rebuild makes the same addon.
      const reverted = spawnSync('patch', [...patchArgs, '--reverse', '--force'], { encoding: 'utf8' });
      if (reverted.status !== 0)
        say(`and the patch could not be taken back out of ${dir}: reinstall with \`npm ci\``);
    }
    return;
  }
  writeFileSync(stamp, digest);
}

main();
