// Validates Kubernetes manifests against the API's schemas, from maintained packages: kubernetes-models
// (and its prometheus-operator models) for each resource's JSON schema (types, required fields, enums,
// formats) and, since those schemas accept unknown fields as the API server's lenient mode does, the
// same packages' TypeScript types for field names (the TypeScript compiler's excess property check: a
// misspelt field fails like kubectl's strict field validation). CRDs without a models package (Strimzi's
// KafkaTopic) by their CRD's OpenAPI schema, unknown fields refused as the API server's strict mode does.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv, type AnySchema } from 'ajv';
import ts from 'typescript';
import { parse } from 'yaml';

const ROOT = path.resolve(import.meta.dirname, '../..');

export interface Manifest {
  /** Where it came from, for messages: `deploy/kubernetes/ingest.yaml#2`. */
  origin: string;
  doc: { apiVersion?: unknown; kind?: unknown; [field: string]: unknown };
}

interface ModelKind {
  /** The module exporting the model class and its `I<Kind>` interface. */
  module: string;
  kind: string;
}

/** Every kind the manifests use, by `apiVersion/kind`. */
const MODELS: Record<string, ModelKind> = {
  'v1/Namespace': { module: 'kubernetes-models/v1/Namespace', kind: 'Namespace' },
  'v1/ServiceAccount': { module: 'kubernetes-models/v1/ServiceAccount', kind: 'ServiceAccount' },
  'v1/ConfigMap': { module: 'kubernetes-models/v1/ConfigMap', kind: 'ConfigMap' },
  'v1/Secret': { module: 'kubernetes-models/v1/Secret', kind: 'Secret' },
  'v1/Service': { module: 'kubernetes-models/v1/Service', kind: 'Service' },
  'apps/v1/Deployment': { module: 'kubernetes-models/apps/v1/Deployment', kind: 'Deployment' },
  'apps/v1/StatefulSet': { module: 'kubernetes-models/apps/v1/StatefulSet', kind: 'StatefulSet' },
  'batch/v1/Job': { module: 'kubernetes-models/batch/v1/Job', kind: 'Job' },
  'autoscaling/v2/HorizontalPodAutoscaler': {
    module: 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler',
    kind: 'HorizontalPodAutoscaler',
  },
  'policy/v1/PodDisruptionBudget': {
    module: 'kubernetes-models/policy/v1/PodDisruptionBudget',
    kind: 'PodDisruptionBudget',
  },
  'monitoring.coreos.com/v1/PrometheusRule': {
    module: '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule',
    kind: 'PrometheusRule',
  },
  'monitoring.coreos.com/v1/ServiceMonitor': {
    module: '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor',
    kind: 'ServiceMonitor',
  },
};

/** CRDs validated by their OpenAPI schema, by `apiVersion/kind`: the file holding the CRD. */
const CRDS: Record<string, string> = {
  'kafka.strimzi.io/v1/KafkaTopic': 'test/fixtures/crds/strimzi-kafkatopic.yaml',
};

const typeOf = (doc: Manifest['doc']) => `${String(doc.apiVersion)}/${String(doc.kind)}`;

/** Every YAML document of the files, in order. */
export function manifestsIn(files: readonly string[]): Manifest[] {
  return files.flatMap((file) => manifestsOf(readFileSync(file, 'utf8'), path.relative(ROOT, file)));
}

export function manifestsOf(text: string, origin: string): Manifest[] {
  return text
    .split(/^---\s*$/m)
    .map((part) => parse(part) as Manifest['doc'] | null)
    .flatMap((doc, index) => (doc ? [{ origin: `${origin}#${index + 1}`, doc }] : []));
}

/**
 * Every error of every manifest, each line naming its origin; empty when all are valid. A kind with
 * no schema here is an error too.
 */
export async function schemaErrors(manifests: readonly Manifest[]): Promise<string[]> {
  const errors: string[] = [];
  const typed: Manifest[] = [];
  for (const manifest of manifests) {
    const type = typeOf(manifest.doc);
    const model = MODELS[type];
    const crd = CRDS[type];
    if (model) {
      const module = (await import(model.module)) as Record<
        string,
        new (
          data: unknown,
        ) => { validate(): void }
      >;
      try {
        new module[model.kind]!(manifest.doc).validate();
      } catch (error) {
        errors.push(`${manifest.origin} (${type}): ${(error as Error).message}`);
      }
      typed.push(manifest);
    } else if (crd) {
      errors.push(...crdErrors(manifest, crd));
    } else {
      errors.push(`${manifest.origin}: no schema for ${type}`);
    }
  }
  errors.push(...fieldNameErrors(typed));
  return errors;
}

const crdValidators = new Map<string, ReturnType<Ajv['compile']>>();

function crdErrors(manifest: Manifest, crdFile: string): string[] {
  let validate = crdValidators.get(crdFile);
  if (!validate) {
    const crd = parse(readFileSync(path.join(ROOT, crdFile), 'utf8')) as {
      spec: { versions: { name: string; schema: { openAPIV3Schema: AnySchema } }[]; group: string };
    };
    const [group, version] = String(manifest.doc.apiVersion).split('/');
    const served = crd.spec.group === group ? crd.spec.versions.find((v) => v.name === version) : undefined;
    if (!served) return [`${manifest.origin}: ${crdFile} serves no ${String(manifest.doc.apiVersion)}`];
    validate = new Ajv({ strict: false, allErrors: true }).compile(
      strictObjects(served.schema.openAPIV3Schema),
    );
    crdValidators.set(crdFile, validate);
  }
  if (validate(manifest.doc)) return [];
  return (validate.errors ?? []).map(
    (e) =>
      `${manifest.origin} (${typeOf(manifest.doc)}): ${e.instancePath || '/'} ${e.message ?? ''}${
        e.keyword === 'additionalProperties' ? ` (${String(e.params.additionalProperty)})` : ''
      }`,
  );
}

/** The schema with unknown fields refused wherever it lists the fields and does not keep unknown ones. */
function strictObjects(schema: unknown): AnySchema {
  if (Array.isArray(schema)) return schema.map(strictObjects) as AnySchema;
  if (typeof schema !== 'object' || schema === null) return schema as AnySchema;
  const copy: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) copy[key] = strictObjects(value);
  const keepsUnknown = copy['x-kubernetes-preserve-unknown-fields'] === true;
  if (copy.properties && !keepsUnknown && copy.additionalProperties === undefined) {
    copy.additionalProperties = false;
  }
  return copy as AnySchema;
}

/**
 * Field names (and types) checked by the TypeScript compiler against the models' interfaces: each
 * manifest becomes an object literal assigned to its `I<Kind>`, where an unknown property is an error.
 */
function fieldNameErrors(manifests: readonly Manifest[]): string[] {
  if (manifests.length === 0) return [];
  const lines: string[] = [];
  const origins: string[] = [];
  manifests.forEach((manifest, i) => {
    const model = MODELS[typeOf(manifest.doc)]!;
    lines.push(`import type { I${model.kind} as T${i} } from '${model.module}';`);
    lines.push(`export const m${i}: T${i} = ${JSON.stringify(manifest.doc)};`);
    origins.push(manifest.origin, manifest.origin);
  });
  const fileName = path.join(ROOT, `test/helpers/.kubernetes-manifests-${process.pid}.ts`);
  const text = lines.join('\n');
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    types: [],
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, version, ...rest) =>
    name === fileName ? ts.createSourceFile(name, text, version) : getSourceFile(name, version, ...rest);
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => name === fileName || fileExists(name);
  const readFile = host.readFile.bind(host);
  host.readFile = (name) => (name === fileName ? text : readFile(name));
  const program = ts.createProgram([fileName], options, host);
  const source = program.getSourceFile(fileName)!;
  return [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)].map(
    (diagnostic) => {
      const line =
        diagnostic.start === undefined ? 0 : source.getLineAndCharacterOfPosition(diagnostic.start).line;
      return `${origins[line] ?? '?'}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, ' ')}`;
    },
  );
}
