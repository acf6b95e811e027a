// `hookledger config check|print`: the configuration validated or shown, nothing started.
import { ConfigError, checkConfig, problemLine } from '../../../runtime/config.js';
import { type ConfigReport, checkConfiguration } from '../../config/check.js';
import { type FileVariables, readConfigFile, withConfigFile } from '../../config/file.js';
import { printableConfig, printText } from '../../config/print.js';
import { type Command, CommandFailed, parseOptions, UsageError } from '../command.js';
import { resolveStackEnv } from '../stack-env.js';

const HELP: Record<'check' | 'print', string> = {
  check: `usage: hookledger config check [--connect] [--json]

Validates every variable hookledger reads (and the configuration file, with --config), without
starting anything: values, how they combine (SASL, TLS, registry login), the files they name, ingest's
sources, the local stack's variables. Prints one line per problem and exits 1 if there is any; warns
about variables with a hookledger prefix that nothing reads (a misspelling such as HOOKLEDGER_SOURCS).

options:
  --connect   also reach the brokers (a metadata request: TLS and SASL included) and the registry
  --json      {"ok", "problems": [{"variable", "message"}], "warnings": [...], "reached"} on stdout
  -h, --help  this text

Exit code 0 valid, 1 a problem found (or not reached, with --connect), 2 a usage error.`,
  print: `usage: hookledger config print [--json]

Prints the effective configuration: every variable with its value after defaults, as NAME=value, and
where it came from (environment, file, local stack, default). Secrets and sources' keys print as
[redacted]; durations in the one duration syntax (7d, 10s, 250ms). An invalid configuration prints its
problems instead (exit 1).

options:
  --json      [{"name", "value", "from"}] on stdout
  -h, --help  this text`,
};

const OVERVIEW = `usage: hookledger config <check|print> [options]

  check    validate every variable (--connect: also reach Kafka and the registry)
  print    the effective configuration, secrets redacted

The configuration comes from the environment, over an optional YAML file of the same names
(\`hookledger --config hookledger.yaml …\`, or HOOKLEDGER_CONFIG_FILE). Every duration variable takes
250ms, 10s, 5m, 72h, 7d, or a bare number of milliseconds. Variables: docs/configuration.md.`;

export interface ConfigIo {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
  env: NodeJS.ProcessEnv;
}

interface Loaded {
  merged: NodeJS.ProcessEnv;
  file: FileVariables;
  stack: Record<string, string>;
}

/** The environment a command would run with: the file under it, a running local stack when none is named. */
function load(io: ConfigIo): Loaded {
  const path = io.env.HOOKLEDGER_CONFIG_FILE;
  const file = path ? readConfigFile(path) : {};
  const merged = withConfigFile(io.env, file);
  let stack: Record<string, string> = {};
  try {
    const resolved = resolveStackEnv(merged);
    if (resolved.using) {
      io.stderr.write(`hookledger: ${resolved.using}\n`);
      stack = Object.fromEntries(
        Object.entries(resolved.env).filter(
          (e): e is [string, string] => merged[e[0]] === undefined && e[1] !== undefined,
        ),
      );
      return { merged: resolved.env, file, stack };
    }
  } catch (error) {
    // No stack and no variables: the check says which variables are missing.
    if (!(error instanceof CommandFailed)) throw error;
  }
  return { merged, file, stack };
}

function reportText(report: ConfigReport): string {
  const lines = [
    ...report.problems.map((p) => `error: ${problemLine(p)}`),
    ...report.warnings.map((w) => `warning: ${w}`),
  ];
  if (report.reached)
    lines.push(
      `reached: Kafka ${report.reached.kafka ? 'yes' : 'no'}, registry ${report.reached.registry ? 'yes' : 'no'}`,
    );
  const count = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`;
  lines.push(
    report.ok
      ? `configuration valid${report.warnings.length ? ` (${count(report.warnings.length, 'warning')})` : ''}`
      : `${count(report.problems.length, 'problem')}${report.warnings.length ? `, ${count(report.warnings.length, 'warning')}` : ''}`,
  );
  return lines.join('\n');
}

async function runCheck(args: string[], io: ConfigIo): Promise<number> {
  const { values } = parseOptions(args, {
    connect: { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
  });
  let report: ConfigReport;
  try {
    const { merged, file } = load(io);
    report = await checkConfiguration(merged, {
      connect: values.connect ?? false,
      fileNames: Object.keys(file),
    });
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    // The file itself cannot be read: that is the one problem.
    report = {
      ok: false,
      problems: [{ variable: 'HOOKLEDGER_CONFIG_FILE', message: error.message }],
      warnings: [],
    };
  }
  io.stdout.write(`${values.json ? JSON.stringify(report) : reportText(report)}\n`);
  return report.ok ? 0 : 1;
}

async function runPrint(args: string[], io: ConfigIo): Promise<number> {
  const { values } = parseOptions(args, { json: { type: 'boolean', default: false } });
  let printed: ReturnType<typeof printableConfig>;
  try {
    const { merged, file, stack } = load(io);
    const checked = checkConfig(merged);
    if (checked.config === undefined) {
      for (const problem of checked.problems) io.stderr.write(`error: ${problemLine(problem)}\n`);
      return 1;
    }
    printed = printableConfig(checked.config, merged, { env: io.env, file, stack });
  } catch (error) {
    // The sources or the --config file cannot be read: a problem of the configuration too (exit 1, as
    // its help says), not a mistake in the command line.
    if (!(error instanceof ConfigError)) throw error;
    io.stderr.write(`error: ${error.message}\n`);
    return 1;
  }
  io.stdout.write(`${values.json ? JSON.stringify(printed) : printText(printed)}\n`);
  return 0;
}

/** Runs `config` with its input and output injected (tests run it in-process). */
export async function runConfigCommand(args: string[], io: ConfigIo): Promise<number> {
  const [subcommand, ...rest] = args;
  if (subcommand === undefined || subcommand === '--help' || subcommand === '-h') {
    io.stdout.write(`${OVERVIEW}\n`);
    return subcommand === undefined ? 2 : 0;
  }
  if (subcommand !== 'check' && subcommand !== 'print')
    throw new UsageError(`config: unknown subcommand "${subcommand}" (expected check or print)`);
  if (rest.includes('--help') || rest.includes('-h')) {
    io.stdout.write(`${HELP[subcommand]}\n`);
    return 0;
  }
  return subcommand === 'check' ? runCheck(rest, io) : runPrint(rest, io);
}

export const command: Command = {
  help: OVERVIEW,
  ownHelp: true,
  run: (args) => runConfigCommand(args, { stdout: process.stdout, stderr: process.stderr, env: process.env }),
};
