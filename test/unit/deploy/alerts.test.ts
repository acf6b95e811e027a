// deploy/prometheus: promtool accepts the rules and their tests pass, and every metric a rule or a
// test series names is one ingest or the processors really expose, with labels they really carry.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { type ExposedSeries, exposition, metricNamesIn, selectorsIn } from '../../helpers/exposed-metrics.js';

const DIR = path.resolve(import.meta.dirname, '../../../deploy/prometheus');

interface Rule {
  alert: string;
  expr: string;
}
interface RulesFile {
  groups: { name: string; rules: Rule[] }[];
}
interface RuleTests {
  tests: {
    input_series: { series: string }[];
    alert_rule_test: { alertname: string; exp_alerts: unknown[] }[];
  }[];
}

const rules = (parse(readFileSync(path.join(DIR, 'alerts.yml'), 'utf8')) as RulesFile).groups.flatMap(
  (g) => g.rules,
);
const ruleTests = parse(readFileSync(path.join(DIR, 'alerts.test.yml'), 'utf8')) as RuleTests;

// promtool evaluates every rule each minute over a day of test series: seconds on a busy machine.
const PROMTOOL_MS = 60_000;

/** Runs Debian's promtool (apt-get install prometheus); its output goes into the failure message. */
function promtool(...args: string[]): string {
  try {
    return execFileSync('promtool', args, { cwd: DIR, encoding: 'utf8', stdio: 'pipe' });
  } catch (error) {
    const failure = error as NodeJS.ErrnoException & { stdout?: string; stderr?: string };
    if (failure.code === 'ENOENT')
      throw new Error('promtool not found: install it with `apt-get install prometheus` (.ci/run does)');
    throw new Error(`promtool ${args.join(' ')} failed:\n${failure.stdout ?? ''}${failure.stderr ?? ''}`);
  }
}

let exposed: ExposedSeries;

// Builds the ingest app and the processors' registries: a few seconds on a busy machine.
beforeAll(async () => {
  exposed = (await exposition()).series;
}, 30_000);

describe('the Prometheus alerts', () => {
  it(
    'pass promtool check rules, and the example configuration that loads them passes check config',
    () => {
      expect(promtool('check', 'rules', 'alerts.yml')).toContain(`SUCCESS: ${rules.length} rules found`);
      expect(promtool('check', 'config', 'prometheus.yml')).toContain('SUCCESS');
    },
    PROMTOOL_MS,
  );

  it(
    'pass their promtool tests (alerts.test.yml)',
    () => {
      expect(promtool('test', 'rules', 'alerts.test.yml')).toContain('SUCCESS');
    },
    PROMTOOL_MS,
  );

  it('have a test that makes each of them fire, and one where it stays quiet', () => {
    const cases = ruleTests.tests.flatMap((t) => t.alert_rule_test);
    for (const { alert } of rules) {
      const mine = cases.filter((c) => c.alertname === alert);
      expect(
        mine.some((c) => c.exp_alerts.length > 0),
        `${alert} fires in a test`,
      ).toBe(true);
      expect(
        mine.some((c) => c.exp_alerts.length === 0),
        `${alert} stays quiet in a test`,
      ).toBe(true);
    }
  });

  it('name only metrics the services expose, with labels those metrics have', () => {
    for (const { alert, expr } of rules) {
      for (const name of metricNamesIn(expr)) expect(exposed.has(name), `${alert} reads ${name}`).toBe(true);
      for (const { name, labels } of selectorsIn(expr)) {
        for (const label of labels)
          expect(exposed.get(name)?.has(label), `${alert}: ${name}{${label}}`).toBe(true);
      }
    }
  });

  it('are tested on series shaped like the real /metrics', () => {
    const series = ruleTests.tests.flatMap((t) => t.input_series.map((s) => s.series));
    expect(series.length).toBeGreaterThan(0);
    for (const text of series) {
      const [selector] = selectorsIn(text);
      expect(selector, text).toBeDefined();
      const labels = exposed.get(selector!.name);
      expect(labels, `${selector!.name} is exposed`).toBeDefined();
      for (const label of selector!.labels) expect(labels!.has(label), `${text}: label ${label}`).toBe(true);
    }
  });

  it('cover what operators must hear about before the platform gives up', () => {
    const read = new Set(rules.flatMap((r) => metricNamesIn(r.expr)));
    for (const name of [
      'hookledger_ingest_failing_webhook_oldest_seconds',
      'hookledger_ingest_signature_failures_total',
      'hookledger_ingest_requests_total',
      'hookledger_stream_consumer_lag',
      'hookledger_dedupe_freshness_seconds_bucket',
      'hookledger_dedupe_dlq_total',
      'hookledger_stream_ready',
      'hookledger_stream_batch_retries_total',
    ])
      expect(read.has(name), name).toBe(true);
  });
});

describe('metricNamesIn', () => {
  it('reads metric names, not functions, keywords, labels or durations', () => {
    expect(
      metricNamesIn(
        'histogram_quantile(0.99, sum by (le, app) (rate(a_bucket{x="y"}[5m]))) / on (app) b offset 1h > 24 * 3600 and c',
      ).sort(),
    ).toEqual(['a_bucket', 'b', 'c']);
  });
});
