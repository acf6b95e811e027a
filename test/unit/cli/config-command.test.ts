// `hookledger config check` and `config print`: what scripts and people read, run in-process.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runConfigCommand } from '../../../tools/cli/commands/config.js';
import { takeConfigOption } from '../../../tools/config/file.js';
import { runCliInProcess } from '../../helpers/cli-in-process.js';

const bin = resolve(import.meta.dirname, '../../../tools/cli/hookledger.js');

const dir = mkdtempSync(join(tmpdir(), 'hookledger-config-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const base = {
  HOOKLEDGER_STATE_DIR: join(dir, 'no-stack'),
  KAFKA_BROKERS: '127.0.0.1:9092',
  SCHEMA_REGISTRY_URL: 'http://127.0.0.1:8081',
  HOOKLEDGER_SOURCES: '{"energy":{"keys":{"k2026a":"s3cret-key-of-32-bytes-0123456789"}}}',
};

async function run(args: string[], env: NodeJS.ProcessEnv) {
  let stdout = '';
  let stderr = '';
  const code = await runConfigCommand(args, {
    env,
    stdout: { write: (t: string) => (stdout += t) },
    stderr: { write: (t: string) => (stderr += t) },
  });
  return { code, stdout, stderr };
}

describe('config check', () => {
  it('exits 0 and says the configuration is valid', async () => {
    const { code, stdout } = await run(['check'], base);
    expect(code).toBe(0);
    expect(stdout.trim()).toBe('configuration valid');
  });

  it('exits 1 with one line per problem, and warns about a misspelled variable', async () => {
    const env = {
      ...base,
      KAFKA_BROKERS: 'no-port',
      INGEST_PORT: 'eighty',
      KAFKA_SASL_PASSWORD: 'hunter2',
      KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
      HOOKLEDGER_SOURCS: '{}',
    };
    const { code, stdout } = await run(['check'], env);
    expect(code).toBe(1);
    const lines = stdout.trim().split('\n');
    expect(lines.filter((l) => l.startsWith('error: '))).toEqual([
      'error: KAFKA_BROKERS: expected host:port[,host:port…] (got "no-port")',
      expect.stringMatching(/^error: INGEST_PORT: .*\(got "eighty"\)$/),
    ]);
    expect(lines).toContain(
      'warning: HOOKLEDGER_SOURCS is not a hookledger variable (did you mean HOOKLEDGER_SOURCES?): ignored',
    );
    expect(lines.at(-1)).toBe('2 problems, 1 warning');
    expect(stdout).not.toContain('hunter2');
  });

  it('warns about a secret that would cross the network unencrypted, except on the local stack', async () => {
    const risky = {
      ...base,
      SCHEMA_REGISTRY_USERNAME: 'svc',
      SCHEMA_REGISTRY_PASSWORD: 'registry-secret',
      KAFKA_SECURITY_PROTOCOL: 'SASL_PLAINTEXT',
      KAFKA_SASL_MECHANISM: 'PLAIN',
      KAFKA_SASL_USERNAME: 'svc',
      KAFKA_SASL_PASSWORD: 'hunter2',
    };
    const { code, stdout } = await run(['check'], risky);
    expect(code).toBe(0);
    expect(stdout.trim().split('\n')).toEqual([
      'warning: SCHEMA_REGISTRY_URL is plain http and a registry login is set: the login crosses the network unencrypted (use https)',
      'warning: KAFKA_SECURITY_PROTOCOL=SASL_PLAINTEXT with KAFKA_SASL_MECHANISM=PLAIN: the Kafka password crosses the network unencrypted (use SASL_SSL)',
      'configuration valid (2 warnings)',
    ]);
    const local = await run(['check'], { ...risky, HOOKLEDGER_LOCAL_STACK: 'true' });
    expect(local.stdout.trim()).toBe('configuration valid');
  });

  it("checks the sources under the project's old name, with a warning to rename it", async () => {
    const { HOOKLEDGER_SOURCES, ...rest } = base;
    const { code, stdout } = await run(['check'], { ...rest, HOOKSTREAM_SOURCES: HOOKLEDGER_SOURCES });
    expect(code).toBe(0);
    expect(stdout.trim().split('\n')).toEqual([
      'warning: HOOKSTREAM_SOURCES is the old name of HOOKLEDGER_SOURCES: read as HOOKLEDGER_SOURCES for now, rename it',
      'configuration valid (1 warning)',
    ]);
    const broken = await run(['check'], { ...rest, HOOKSTREAM_SOURCES: '{"energy": secret' });
    expect(broken.code).toBe(1);
    expect(broken.stdout).toContain('error: HOOKSTREAM_SOURCES: not valid JSON');
  });

  it('checks how variables combine once each is valid (SASL without a mechanism)', async () => {
    const { code, stdout } = await run(['check', '--json'], {
      ...base,
      KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
      KAFKA_SASL_PASSWORD: 'hunter2',
    });
    expect(code).toBe(1);
    const report = JSON.parse(stdout);
    expect(report).toEqual({ ok: false, problems: [expect.any(Object)], warnings: [] });
    expect(report.problems[0].variable).toMatch(/^KAFKA_/);
    expect(stdout).not.toContain('hunter2');
  });

  it('--json: {ok, problems: [{variable, message}], warnings}', async () => {
    const { code, stdout } = await run(['check', '--json'], { ...base, TOPIC_PREFIX: 'a b' });
    expect(code).toBe(1);
    expect(JSON.parse(stdout)).toEqual({
      ok: false,
      problems: [
        { variable: 'TOPIC_PREFIX', message: 'expected letters, digits, ".", "_" or "-" (got "a b")' },
      ],
      warnings: [],
    });
  });

  it('reports ingest sources that do not parse, without their text', async () => {
    const { code, stdout } = await run(['check'], { ...base, HOOKLEDGER_SOURCES: '{"energy": secret' });
    expect(code).toBe(1);
    expect(stdout).toContain('error: HOOKLEDGER_SOURCES: not valid JSON');
    expect(stdout).not.toContain('secret');
  });
});

describe('config print', () => {
  it('shows every variable in effect with where it came from, secrets and keys redacted', async () => {
    const { code, stdout } = await run(['print', '--json'], {
      ...base,
      KAFKA_SASL_PASSWORD: 'hunter2',
      INGEST_DEADLINE_MS: '5000',
    });
    expect(code).toBe(0);
    expect(stdout).not.toContain('hunter2');
    expect(stdout).not.toContain('s3cret-key');
    const printed = JSON.parse(stdout) as { name: string; value: string; from: string }[];
    const byName = new Map(printed.map((p) => [p.name, p]));
    expect(byName.get('KAFKA_SASL_PASSWORD')).toEqual({
      name: 'KAFKA_SASL_PASSWORD',
      value: '[redacted]',
      from: 'environment',
    });
    expect(byName.get('INGEST_DEADLINE_MS')).toMatchObject({ value: '5s', from: 'environment' });
    expect(byName.get('DEDUPE_WINDOW')).toMatchObject({ value: '7d', from: 'default' });
    expect(byName.get('HOOKLEDGER_SOURCES')?.value).toBe('{"energy":{"keys":{"k2026a":"[redacted]"}}}');
  });

  it('prints NAME=value lines, and problems instead of a configuration that is not valid', async () => {
    const ok = await run(['print'], base);
    expect(ok.stdout).toMatch(/^KAFKA_BROKERS=127\.0\.0\.1:9092 +# environment$/m);
    const bad = await run(['print'], { ...base, LOG_LEVEL: 'loud' });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^error: LOG_LEVEL: /);
    expect(bad.stdout).toBe('');
    // Sources that cannot be read are a problem of the configuration too: exit 1, one line.
    const sources = await run(['print'], { ...base, HOOKLEDGER_SOURCES: '{"energy": secret' });
    expect(sources.code).toBe(1);
    expect(sources.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^error: HOOKLEDGER_SOURCES/)]);
    expect(sources.stdout).toBe('');
  });
});

describe('the configuration file', () => {
  it('sets what the environment does not; the environment overrides it', async () => {
    const file = join(dir, 'hookledger.yaml');
    writeFileSync(
      file,
      [
        'TOPIC_PREFIX: staging.',
        'INGEST_PORT: 8081',
        'DEDUPE_WINDOW: 10d',
        'HOOKLEDGER_SOURCES:',
        '  sandbox:',
        '    signature: none',
        'INGEST_UNSIGNED_SOURCES: sandbox',
        'HOOKLEDGER_SOURCS: oops',
      ].join('\n'),
    );
    const env = { ...base, HOOKLEDGER_SOURCES: '', HOOKLEDGER_CONFIG_FILE: file, INGEST_PORT: '9000' };
    const printed = JSON.parse((await run(['print', '--json'], env)).stdout) as {
      name: string;
      value: string;
      from: string;
    }[];
    const byName = new Map(printed.map((p) => [p.name, p]));
    expect(byName.get('TOPIC_PREFIX')).toMatchObject({ value: 'staging.', from: 'file' });
    expect(byName.get('DEDUPE_WINDOW')).toMatchObject({ value: '10d', from: 'file' });
    expect(byName.get('INGEST_PORT')).toMatchObject({ value: '9000', from: 'environment' });
    expect(byName.get('HOOKLEDGER_SOURCES')).toMatchObject({
      value: '{"sandbox":{"signature":"none"}}',
      from: 'file',
    });
    const check = await run(['check'], env);
    expect(check.stdout).toContain('warning: HOOKLEDGER_SOURCS is not a hookledger variable');
  });

  it('that cannot be read or is not a mapping is the one problem', async () => {
    const missing = await run(['check', '--json'], {
      ...base,
      HOOKLEDGER_CONFIG_FILE: join(dir, 'nope.yaml'),
    });
    expect(missing.code).toBe(1);
    expect(JSON.parse(missing.stdout).problems[0].message).toMatch(/nope\.yaml: cannot read it \(ENOENT\)/);
    const list = join(dir, 'list.yaml');
    writeFileSync(list, '- a\n- b\n');
    const notMapping = await run(['check'], { ...base, HOOKLEDGER_CONFIG_FILE: list });
    expect(notMapping.stdout).toContain('expected a mapping of variable names to values');
  });
});

// Its last case starts node with tsx's loader: seconds on a busy machine, beyond vitest's default 5 s.
describe('the global --config option', { timeout: 60_000 }, () => {
  it('is taken out of the arguments wherever it stands before --', () => {
    expect(takeConfigOption(['--config', 'a.yaml', 'tail', 'x'])).toEqual({
      args: ['tail', 'x'],
      file: 'a.yaml',
    });
    expect(takeConfigOption(['tail', '--config=b.yaml', 'x'])).toEqual({
      args: ['tail', 'x'],
      file: 'b.yaml',
    });
    expect(takeConfigOption(['simulate', '--', '--config', 'c'])).toEqual({
      args: ['simulate', '--', '--config', 'c'],
    });
    expect(() => takeConfigOption(['--config'])).toThrow('--config: expected a file');
  });

  it('reaches a command run as a user runs it, before or after the command', async () => {
    const file = join(dir, 'global.yaml');
    writeFileSync(file, 'TOPIC_PREFIX: from-file.\n');
    const env = { PATH: process.env.PATH, ...base };
    const spawned = (args: string[]) =>
      spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8', env, timeout: 30_000 });
    const inProcess = (args: string[]) =>
      runCliInProcess(args, { ...env, HOOKLEDGER_CONFIG_FILE: undefined });
    for (const result of [
      spawned(['--config', file, '--json', 'config', 'print']),
      await inProcess(['config', 'print', '--json', '--config', file]),
    ]) {
      expect(result.status).toBe(0);
      const printed = JSON.parse(result.stdout) as { name: string; value: string; from: string }[];
      expect(printed.find((p) => p.name === 'TOPIC_PREFIX')).toEqual({
        name: 'TOPIC_PREFIX',
        value: 'from-file.',
        from: 'file',
      });
    }
  });
});
