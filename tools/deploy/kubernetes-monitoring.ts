// The Kubernetes monitoring resources made from deploy/prometheus/alerts.yml and the Grafana dashboard,
// so the PrometheusRule and the dashboard's ConfigMap can never drift from them (a test compares).
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parse, stringify } from 'yaml';

const DEPLOY = path.resolve(import.meta.dirname, '../../deploy');

export const SOURCES = {
  alerts: path.join(DEPLOY, 'prometheus/alerts.yml'),
  dashboard: path.join(DEPLOY, 'grafana/hookledger.json'),
};

export const GENERATED = {
  prometheusRule: path.join(DEPLOY, 'kubernetes/monitoring/prometheus-rule.yaml'),
  dashboard: path.join(DEPLOY, 'kubernetes/monitoring/grafana-dashboard.yaml'),
};

const LABELS = { 'app.kubernetes.io/part-of': 'hookledger' };

function header(source: string): string {
  return [
    `# Generated from deploy/${path.relative(DEPLOY, source)} by \`npm run deploy:generate\`: edit that file, then run it.`,
    '# test/unit/deploy/kubernetes.test.ts fails when this file and its source differ.',
  ].join('\n');
}

/** deploy/prometheus/alerts.yml's groups as a Prometheus Operator PrometheusRule. */
export function prometheusRule(alertsYaml: string): string {
  const { groups } = parse(alertsYaml) as { groups: unknown[] };
  const rule = {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'PrometheusRule',
    metadata: { name: 'hookledger', labels: LABELS },
    spec: { groups },
  };
  return `${header(SOURCES.alerts)}\n${stringify(rule, { lineWidth: 0 })}`;
}

/** The dashboard, byte for byte, in a ConfigMap that Grafana's dashboard sidecar loads (label grafana_dashboard). */
export function dashboardConfigMap(dashboardJson: string): string {
  const map = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'hookledger-grafana-dashboard', labels: { ...LABELS, grafana_dashboard: '1' } },
    data: { 'hookledger.json': dashboardJson },
  };
  return `${header(SOURCES.dashboard)}\n${stringify(map, { lineWidth: 0 })}`;
}

/** What each generated file must hold now. */
export function generated(): Record<keyof typeof GENERATED, string> {
  return {
    prometheusRule: prometheusRule(readFileSync(SOURCES.alerts, 'utf8')),
    dashboard: dashboardConfigMap(readFileSync(SOURCES.dashboard, 'utf8')),
  };
}

if (process.argv[1] === import.meta.filename) {
  const files = generated();
  for (const key of Object.keys(GENERATED) as (keyof typeof GENERATED)[]) {
    writeFileSync(GENERATED[key], files[key]);
    console.log(`wrote ${path.relative(process.cwd(), GENERATED[key])}`);
  }
}
