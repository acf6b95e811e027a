// Whether a schema can read data written with earlier ones: the BACKWARD_TRANSITIVE rule, checked offline.
import avro from 'avsc';

/**
 * Why `reader` cannot read data written with `writer` (both Avro JSON text), or undefined when it can.
 * avsc builds a resolver only for compatible pairs: a new field without a default, a changed type or a
 * renamed record without an alias all make it throw.
 */
export function readIncompatibility(reader: string, writer: string): string | undefined {
  try {
    avro.Type.forSchema(JSON.parse(reader)).createResolver(avro.Type.forSchema(JSON.parse(writer)));
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}
