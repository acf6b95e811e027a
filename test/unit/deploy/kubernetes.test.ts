// deploy/kubernetes: every manifest is valid against the Kubernetes API schemas (kubernetes-models,
// its prometheus-operator models, Strimzi's KafkaTopic CRD), a wrong field name or type fails, the
// monitoring resources are generated from deploy/prometheus and deploy/grafana (no drift), and the
// manifests keep what the services need: their user, probes, termination periods and secrets as files.

import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it, onTestFinished } from 'vitest';
import { parse } from 'yaml';
import { loadSources } from '../../../ingest/sources.js';
import { loadConfig } from '../../../runtime/config.js';
import { SECRET_VARIABLES } from '../../../runtime/secret-files.js';
import { topicCatalog } from '../../../schemas/topics.js';
import { GENERATED, generated } from '../../../tools/deploy/kubernetes-monitoring.js';
import { resourceName, strimziTopics } from '../../../tools/deploy/strimzi-topics.js';
import { type Manifest, manifestsIn, manifestsOf, schemaErrors } from '../../helpers/kubernetes-schemas.js';

// biome-ignore lint/suspicious/noExplicitAny: manifests are parsed YAML, walked by path in these tests
type Yaml = any;

const ROOT = path.resolve(import.meta.dirname, '../../..');
const DIR = path.join(ROOT, 'deploy/kubernetes');
const yamlFiles = readdirSync(DIR, { recursive: true, encoding: 'utf8' })
  .filter((f) => f.endsWith('.yaml'))
  .sort();
const kustomizations = yamlFiles.filter((f) => path.basename(f) === 'kustomization.yaml');
const manifestFiles = yamlFiles.filter((f) => !kustomizations.includes(f));
const manifests = manifestsIn(manifestFiles.map((f) => path.join(DIR, f)));
const docs = manifests.map((m) => m.doc as Record<string, Yaml>);
const find = (kind: string, name: string) => {
  const found = docs.find((d) => d.kind === kind && d.metadata?.name === name);
  if (!found) throw new Error(`no ${kind} ${name} in deploy/kubernetes`);
  return found;
};
const configMap = find('ConfigMap', 'hookledger-config').data as Record<string, string>;
const secret = find('Secret', 'hookledger-secrets').stringData as Record<string, string>;
const ingest = find('Deployment', 'hookledger-ingest');
const processors = find('StatefulSet', 'hookledger-processors');
const job = find('Job', 'hookledger-topics');
const workloads = [ingest, processors, job];
const containerOf = (workload: Yaml) => workload.spec.template.spec.containers[0];
const envOf = (workload: Yaml): Record<string, string> => ({
  ...configMap,
  ...Object.fromEntries(
    (containerOf(workload).env ?? []).filter((e: Yaml) => 'value' in e).map((e: Yaml) => [e.name, e.value]),
  ),
});

// The schema check compiles the manifests with TypeScript: a second or two, more on a busy machine.
const SCHEMA_MS = 60_000;

/** One manifest of the real ones, changed by `edit`: the negative tests start from valid input. */
function edited(kind: string, name: string, edit: (doc: Yaml) => void): Manifest[] {
  const doc = structuredClone(find(kind, name));
  edit(doc);
  return [{ origin: `${kind} ${name} (edited)`, doc }];
}

describe('the Kubernetes manifests', () => {
  it(
    'are each valid against the Kubernetes API schemas (field names and types)',
    async () => {
      expect(manifests.length).toBeGreaterThanOrEqual(14);
      expect(await schemaErrors(manifests)).toEqual([]);
    },
    SCHEMA_MS,
  );

  it(
    'fail the check with a misspelt field, a field of the wrong type, or a missing required one',
    async () => {
      const misspelt = await schemaErrors(
        edited('Deployment', 'hookledger-ingest', (d) => {
          const container = d.spec.template.spec.containers[0];
          container.readinesProbe = container.readinessProbe;
          delete container.readinessProbe;
        }),
      );
      expect(misspelt.join('\n')).toMatch(/readinesProbe/);
      const wrongType = await schemaErrors(
        edited('StatefulSet', 'hookledger-processors', (d) => {
          d.spec.template.spec.containers[0].ports[0].containerPort = '9090';
        }),
      );
      expect(wrongType.join('\n')).toMatch(/containerPort/);
      const topLevel = await schemaErrors(
        edited('PodDisruptionBudget', 'hookledger-ingest', (d) => {
          d.spec.maxUnavailabe = 1;
        }),
      );
      expect(topLevel.join('\n')).toMatch(/maxUnavailabe/);
      const missing = await schemaErrors(
        edited('HorizontalPodAutoscaler', 'hookledger-ingest', (d) => {
          delete d.spec.scaleTargetRef;
        }),
      );
      expect(missing.join('\n')).toMatch(/scaleTargetRef/);
      const rule = await schemaErrors(
        edited('PrometheusRule', 'hookledger', (d) => {
          d.spec.groups[0].rules[0].for = 300;
        }),
      );
      expect(rule.join('\n')).toMatch(/for/);
      const monitor = await schemaErrors(
        edited('ServiceMonitor', 'hookledger', (d) => {
          d.spec.endpoints[0].prot = 'ops';
        }),
      );
      expect(monitor.join('\n')).toMatch(/prot/);
      expect(
        await schemaErrors(manifestsOf('apiVersion: v1\nkind: Podd\nmetadata: {name: x}\n', 'x')),
      ).toEqual(['x#1: no schema for v1/Podd']);
    },
    SCHEMA_MS,
  );

  it('are each listed by exactly one kustomization, which lists only files that exist', () => {
    const listed = kustomizations.flatMap((file) => {
      const { resources } = parse(readFileSync(path.join(DIR, file), 'utf8')) as { resources: string[] };
      return resources
        .map((r) => path.join(path.dirname(file), r))
        .filter((r) => !kustomizations.includes(path.join(r, 'kustomization.yaml')));
    });
    for (const file of listed) expect(manifestFiles, `${file} exists`).toContain(file);
    // The secret's example never goes in: real secrets come from the operator's own tooling.
    expect([...listed].sort()).toEqual(manifestFiles.filter((f) => f !== 'secret.example.yaml'));
    expect(new Set(listed).size).toBe(listed.length);
  });

  it('run the image of this version, as its kustomizations set it', () => {
    const { version } = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
      version: string;
    };
    for (const file of ['kustomization.yaml', 'setup/kustomization.yaml']) {
      const { images } = parse(readFileSync(path.join(DIR, file), 'utf8')) as {
        images: { name: string; newTag: string }[];
      };
      expect(images, file).toEqual([expect.objectContaining({ name: 'hookledger', newTag: version })]);
    }
    for (const workload of workloads) expect(containerOf(workload).image).toBe('hookledger');
    expect(containerOf(ingest).args).toEqual(['ingest']);
    expect(containerOf(processors).args).toEqual(['process']);
    expect(containerOf(job).args).toEqual(['topics']);
  });

  it("run as the Dockerfile's non-root user on a read-only root filesystem, without privileges", () => {
    const user = /^USER\s+(\S+)\s*$/m.exec(readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8'))?.[1];
    // The node images' `node` user and group.
    expect(user).toBe('node');
    for (const workload of workloads) {
      const pod = workload.spec.template.spec;
      expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000, runAsGroup: 1000 });
      expect(pod.automountServiceAccountToken).toBe(false);
      for (const container of pod.containers) {
        expect(container.securityContext).toEqual({
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          capabilities: { drop: ['ALL'] },
        });
      }
    }
  });

  it('give ingest a termination period longer than its drain, deadline and flush, and probe it on its ops port', () => {
    const env = envOf(ingest);
    const bound = Number(env.INGEST_DRAIN_DELAY_MS) + 2 * Number(env.INGEST_DEADLINE_MS) + 5_000;
    expect(Number(env.INGEST_DRAIN_DELAY_MS)).toBeGreaterThan(0);
    expect(ingest.spec.template.spec.terminationGracePeriodSeconds * 1000).toBeGreaterThan(bound);
    const container = containerOf(ingest);
    const ports = Object.fromEntries(container.ports.map((p: Yaml) => [p.name, p.containerPort]));
    expect(ports).toEqual({ http: Number(env.INGEST_PORT), ops: Number(env.INGEST_OPS_PORT) });
    expect(env.INGEST_OPS_HOST).toBe('0.0.0.0');
    expect(container.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'ops' });
    expect(container.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'ops' });
    // A draining pod leaves the endpoints within one probe period of SIGTERM, well inside the drain.
    const { periodSeconds, failureThreshold } = container.readinessProbe;
    expect(periodSeconds * failureThreshold * 1000).toBeLessThan(Number(env.INGEST_DRAIN_DELAY_MS));
    // Capacity never drops during a rollout, and the autoscaler owns the replica count.
    expect(ingest.spec.strategy.rollingUpdate.maxUnavailable).toBe(0);
    expect(ingest.spec.replicas).toBeUndefined();
    expect(find('HorizontalPodAutoscaler', 'hookledger-ingest').spec.scaleTargetRef.name).toBe(
      'hookledger-ingest',
    );
  });

  it('name each processor instance after its pod, and give it longer than a commit and its own shutdown bound', () => {
    const instance = containerOf(processors).env.find((e: Yaml) => e.name === 'HOOKLEDGER_INSTANCE_ID');
    expect(instance.valueFrom).toEqual({ fieldRef: { fieldPath: 'metadata.name' } });
    const grace = processors.spec.template.spec.terminationGracePeriodSeconds * 1000;
    expect(grace).toBeGreaterThan(Number(configMap.PROCESSOR_TRANSACTION_TIMEOUT_MS));
    // tools/cli/commands/process.ts exits after 30 s of a graceful stop.
    const processCommand = readFileSync(path.join(ROOT, 'tools/cli/commands/process.ts'), 'utf8');
    const ownBound = Number(
      /exitProcess\(1\);\s*\},\s*([\d_]+)\)/.exec(processCommand)?.[1]?.replace(/_/g, ''),
    );
    expect(ownBound).toBeGreaterThan(0);
    expect(grace).toBeGreaterThan(ownBound);
    const container = containerOf(processors);
    expect(container.ports).toEqual([
      { name: 'ops', containerPort: Number(envOf(processors).PROCESSOR_PORT), protocol: 'TCP' },
    ]);
    expect(container.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'ops' });
    expect(container.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'ops' });
    // More instances than partitions would sit idle.
    expect(processors.spec.replicas).toBeLessThanOrEqual(Number(configMap.TOPIC_PARTITIONS));
  });

  it('keep each processor instance’s state on a volume of its own, mounted where PROCESSOR_STATE_DIR says', () => {
    expect(envOf(processors).PROCESSOR_STATE_STORE).toBe('lmdb');
    const mount = containerOf(processors).volumeMounts.find((m: Yaml) => m.name === 'state');
    expect(mount.mountPath).toBe(envOf(processors).PROCESSOR_STATE_DIR);
    const [claim] = processors.spec.volumeClaimTemplates;
    expect(claim.metadata.name).toBe('state');
    expect(claim.spec.accessModes).toEqual(['ReadWriteOnce']);
  });

  it('keep each workload in a disruption budget of one pod at a time', () => {
    for (const [name, labels] of [
      ['hookledger-ingest', ingest.spec.selector.matchLabels],
      ['hookledger-processors', processors.spec.selector.matchLabels],
    ]) {
      const budget = find('PodDisruptionBudget', name).spec;
      expect(budget.maxUnavailable).toBe(1);
      expect(budget.selector.matchLabels).toEqual(labels);
    }
  });

  it('read every secret from a file of the mounted Secret, and nothing secret from the ConfigMap', () => {
    for (const name of SECRET_VARIABLES) expect(configMap[name], name).toBeUndefined();
    for (const workload of workloads) {
      const pod = workload.spec.template.spec;
      const volume = pod.volumes.find((v: Yaml) => v.secret?.secretName === 'hookledger-secrets');
      const mount = containerOf(workload).volumeMounts.find((m: Yaml) => m.name === volume.name);
      expect(mount.readOnly).toBe(true);
      const files = Object.entries(envOf(workload)).filter(
        ([name]) =>
          name.endsWith('_FILE') && (SECRET_VARIABLES as readonly string[]).includes(name.slice(0, -5)),
      );
      for (const [name, file] of [
        ...files,
        ...(workload === ingest ? [['HOOKLEDGER_SOURCES_FILE', envOf(ingest).HOOKLEDGER_SOURCES_FILE!]] : []),
      ]) {
        expect(path.dirname(file!), name).toBe(mount.mountPath);
        expect(Object.keys(secret), name).toContain(path.basename(file!));
      }
    }
  });

  describe('with the example secret mounted', () => {
    const mounted = mkdtempSync(path.join(tmpdir(), 'hookledger-k8s-'));
    afterAll(() => rmSync(mounted, { recursive: true, force: true }));
    // The example holds a placeholder where the shared key goes (ingest refuses it as it is, below):
    // filled in, as an operator does, with a key of `openssl rand -hex 32`'s form.
    const sharedKey = randomBytes(32).toString('hex');
    for (const [key, value] of Object.entries(secret))
      writeFileSync(path.join(mounted, key), value.replace('<the shared key>', sharedKey));
    const asMounted = (env: Record<string, string>) =>
      Object.fromEntries(
        Object.entries(env).map(([k, v]) => [k, v.replace('/run/secrets/hookledger', mounted)]),
      );

    it("give every workload a configuration hookledger accepts (ingest's sources included)", () => {
      for (const workload of workloads) expect(() => loadConfig(asMounted(envOf(workload)))).not.toThrow();
      const config = loadConfig(asMounted(envOf(ingest)));
      expect(config.KAFKA_SASL_PASSWORD).toBe(secret['kafka-sasl-password']);
      expect(config.INGEST_DRAIN_DELAY_MS).toBe(Number(configMap.INGEST_DRAIN_DELAY_MS));
      expect([...loadSources(asMounted(envOf(ingest))).keys()]).toEqual(['platform']);
    });

    it('refuse the example secret applied unchanged: its key is a placeholder', () => {
      const unchanged = mkdtempSync(path.join(tmpdir(), 'hookledger-k8s-'));
      try {
        writeFileSync(path.join(unchanged, 'sources.json'), secret['sources.json']!);
        expect(() => loadSources({ HOOKLEDGER_SOURCES_FILE: path.join(unchanged, 'sources.json') })).toThrow(
          /platform\.keys\.k2026a: a key is at least 20 bytes/,
        );
      } finally {
        rmSync(unchanged, { recursive: true, force: true });
      }
    });
  });

  it('have a ServiceMonitor that scrapes both ops ports under the job names the alerts use', () => {
    const monitor = find('ServiceMonitor', 'hookledger').spec;
    const alerts = readFileSync(path.join(ROOT, 'deploy/prometheus/alerts.yml'), 'utf8');
    const jobs = [...alerts.matchAll(/up\{job="([^"]+)"\}/g)].map((m) => m[1]!).sort();
    expect(jobs).toEqual(['hookledger-ingest', 'hookledger-processors']);
    for (const job of jobs) {
      // The Prometheus Operator names the job after the Service.
      const service = find('Service', job);
      for (const [label, value] of Object.entries(monitor.selector.matchLabels))
        expect(service.metadata.labels[label]).toBe(value);
      expect(service.spec.ports.map((p: Yaml) => p.name)).toContain(monitor.endpoints[0].port);
    }
    expect(monitor.endpoints).toEqual([expect.objectContaining({ port: 'ops', path: '/metrics' })]);
  });

  it('hold the alert rules and the dashboard exactly as deploy/prometheus and deploy/grafana have them', () => {
    const now = generated();
    for (const key of Object.keys(GENERATED) as (keyof typeof GENERATED)[]) {
      expect(
        readFileSync(GENERATED[key], 'utf8'),
        `${path.relative(ROOT, GENERATED[key])}: run npm run deploy:generate`,
      ).toBe(now[key]);
    }
    const rules = parse(readFileSync(path.join(ROOT, 'deploy/prometheus/alerts.yml'), 'utf8'));
    expect(find('PrometheusRule', 'hookledger').spec.groups).toEqual(rules.groups);
    const dashboard = find('ConfigMap', 'hookledger-grafana-dashboard');
    expect(dashboard.data['hookledger.json']).toBe(
      readFileSync(path.join(ROOT, 'deploy/grafana/hookledger.json'), 'utf8'),
    );
    expect(dashboard.metadata.labels.grafana_dashboard).toBe('1');
  });
});

describe('hookledger topics --output strimzi', () => {
  const catalog = topicCatalog({
    prefix: '',
    bodyLimit: 1_048_576,
    dedupeWindowMs: 7 * 86_400_000,
    partitions: 24,
    replicationFactor: 3,
  });

  it(
    'prints one KafkaTopic per topic, valid against Strimzi’s CRD, with its partitions, replicas and configs',
    async () => {
      const resources = manifestsOf(
        strimziTopics(catalog, { cluster: 'prod', namespace: 'kafka' }),
        'strimzi',
      );
      expect(resources).toHaveLength(catalog.length);
      expect(await schemaErrors(resources)).toEqual([]);
      const raw = resources[0]!.doc as Yaml;
      expect(raw.metadata).toMatchObject({
        name: 'webhooks.raw',
        namespace: 'kafka',
        labels: { 'strimzi.io/cluster': 'prod' },
      });
      expect(raw.spec).toEqual({
        partitions: 24,
        replicas: 3,
        config: {
          'min.insync.replicas': 2,
          'unclean.leader.election.enable': false,
          'cleanup.policy': 'delete',
          'retention.ms': -1,
          'retention.bytes': -1,
          'max.message.bytes': 1_114_112,
        },
      });
      for (const resource of resources) {
        const spec = (resource.doc as Yaml).spec;
        const topic = catalog.find((t) => t.name === ((resource.doc as Yaml).metadata.name as string))!;
        expect(spec.partitions).toBe(topic.partitions);
        expect(Object.keys(spec.config).sort()).toEqual(Object.keys(topic.configs).sort());
      }
    },
    SCHEMA_MS,
  );

  it('fails the CRD check with a misspelt field or a field of the wrong type', async () => {
    const [raw] = manifestsOf(strimziTopics(catalog, { cluster: 'prod' }), 'strimzi');
    const misspelt = structuredClone(raw!.doc) as Yaml;
    misspelt.spec.partition = misspelt.spec.partitions;
    delete misspelt.spec.partitions;
    expect((await schemaErrors([{ origin: 'misspelt', doc: misspelt }])).join('\n')).toMatch(/partition\b/);
    const wrongType = structuredClone(raw!.doc) as Yaml;
    wrongType.spec.replicas = '3';
    expect((await schemaErrors([{ origin: 'wrong type', doc: wrongType }])).join('\n')).toMatch(
      /replicas must be integer/,
    );
  });

  it('names a topic whose name is no Kubernetes name by topicName', () => {
    const prefixed = topicCatalog({
      prefix: 'Stage_',
      bodyLimit: 1_048_576,
      dedupeWindowMs: 7 * 86_400_000,
      partitions: 12,
      replicationFactor: 3,
    });
    const [raw] = manifestsOf(strimziTopics(prefixed, { cluster: 'prod' }), 'strimzi');
    expect((raw!.doc as Yaml).metadata.name).toBe('stage-webhooks.raw');
    expect((raw!.doc as Yaml).spec.topicName).toBe('Stage_webhooks.raw');
    expect(resourceName('-A__b-')).toBe('a--b');
  });

  it('needs no cluster: run as a user runs it, with no Kafka variable set', () => {
    const bin = path.join(ROOT, 'tools/cli/hookledger.js');
    const env = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      TOPIC_PARTITIONS: '6',
    } as NodeJS.ProcessEnv;
    // A fresh directory: no local stack to find there.
    const cwd = mkdtempSync(path.join(tmpdir(), 'hookledger-strimzi-'));
    onTestFinished(() => rmSync(cwd, { recursive: true, force: true }));
    const run = spawnSync(
      process.execPath,
      [bin, 'topics', '--output', 'strimzi', '--strimzi-cluster', 'c1'],
      {
        encoding: 'utf8',
        env,
        cwd,
        timeout: 30_000,
      },
    );
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    const resources = manifestsOf(run.stdout, 'stdout');
    expect(resources).toHaveLength(catalog.length);
    expect(resources.every((r) => (r.doc as Yaml).spec.partitions === 6)).toBe(true);
    const missing = spawnSync(process.execPath, [bin, 'topics', '--output', 'strimzi'], {
      encoding: 'utf8',
      env,
      timeout: 30_000,
    });
    expect(missing.status).toBe(2);
    expect(missing.stderr).toMatch(/--strimzi-cluster/);
  }, 60_000);
});
