// A schema registry answering only GET /schemas/ids/{id} from the catalog's schema files, in this
// process: enough for a serde that decodes and encodes with known ids (a benchmark, a unit test), never
// for an integration test (those use the real registry).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadSchema } from '../../schemas/schema-files.js';
import { catalogSubjects } from '../../schemas/topics.js';

export interface LocalRegistry {
  url: string;
  /** Each catalog subject's schema id (one id per schema file, as a registry gives equal schemas one id). */
  idOf: Map<string, number>;
  /** Serves one more schema (say, another version of a catalog one); resolves to its new id. */
  add(schema: string): number;
  close(): void;
}

/** A registry that knows every catalog schema, ids 1…n, as GET /schemas/ids/{id} answers. */
export async function localRegistry(): Promise<LocalRegistry> {
  const subjects = catalogSubjects('');
  const schemas = new Map<number, string>();
  const idOf = new Map<string, number>();
  const bySchema = new Map<string, number>();
  for (const { subject, schema } of subjects) {
    let id = bySchema.get(schema);
    if (id === undefined) {
      id = bySchema.size + 1;
      bySchema.set(schema, id);
      schemas.set(id, loadSchema(schema));
    }
    idOf.set(subject, id);
  }
  const server = createServer((request, response) => {
    const id = Number(/^\/schemas\/ids\/(\d+)/.exec(request.url ?? '')?.[1]);
    const schema = schemas.get(id);
    response.writeHead(schema === undefined ? 404 : 200, {
      'content-type': 'application/vnd.schemaregistry.v1+json',
    });
    response.end(JSON.stringify(schema === undefined ? { error_code: 40403 } : { schema }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const add = (schema: string) => {
    const id = schemas.size + 1;
    schemas.set(id, schema);
    return id;
  };
  return { url: `http://127.0.0.1:${port}`, idOf, add, close: () => server.close() };
}
