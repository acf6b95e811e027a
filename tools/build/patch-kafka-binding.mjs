#!/usr/bin/env node
import { spawnSync } from 'node:child_process';
// npm's postinstall: applies hookledger's patch to the Kafka client's native binding (its message
// conversion, see kafka-javascript-<version>.patch beside this file) and rebuilds the addon, when
// the binding was built from source (CKJS_LINKING=dynamic npm ci, as on machines that cannot download
// its prebuilt binary). The addon alone is recompiled, not librdkafka: about half a minute.
//
// Without the patch everything works the same, only slower (a changelog restore takes about 1.6× the
// CPU per record). So a binding this patch is not for, or a prebuilt one, is left as it is, with a
// line saying so; a patch that does not apply to the version it is for is an error.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const say = (line) => console.error(`hookledger postinstall: ${line}`);

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

  const applied = spawnSync(
    'patch',
    ['-p1', '--forward', '--dry-run', '--silent', '-d', dir, '-i', patchFile],
    {
      encoding: 'utf8',
    },
  );
  if (applied.error !== undefined) {
    say(
      `the \`patch\` program is missing (${applied.error.message}): the Kafka client's binding is not patched`,
    );
    return;
  }
  const alreadyPatched = readFileSync(join(dir, 'src', 'common.cc'), 'utf8').includes(
    'BatchBytes::BatchBytes',
  );
  if (!alreadyPatched) {
    if (applied.status !== 0) {
      throw new Error(`${patchFile} does not apply to ${dir}:\n${applied.stdout}${applied.stderr}`);
    }
    const done = spawnSync('patch', ['-p1', '--forward', '--silent', '-d', dir, '-i', patchFile], {
      stdio: 'inherit',
    });
    if (done.status !== 0) throw new Error(`patch failed on ${dir} (exit ${done.status})`);
  }
  const gyp = nodeGyp();
  if (gyp === undefined)
    throw new Error('node-gyp not found (npm bundles it): cannot rebuild the patched binding');
  say('rebuilding the Kafka client binding with its patch (tools/build/kafka-javascript-*.patch)');
  // Its compiler warnings are the upstream sources' own: shown only when the build fails.
  const built = spawnSync(process.execPath, [gyp, 'build', '--jobs', 'max'], {
    cwd: dir,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  if (built.status !== 0) {
    throw new Error(
      `node-gyp build of the patched binding failed (exit ${built.status}):\n${built.stdout}${built.stderr}`,
    );
  }
  writeFileSync(stamp, `${digest}\n`);
}

main();
