// Reads topic and broker configs with one DescribeConfigs v1 request on a connection of our own: the one
// admin request hookledger needs that librdkafka's Node binding lacks (see describe-configs-codec.ts for
// why and how). The connection speaks what the other clients' librdkafka properties say: PLAINTEXT, TLS,
// and SASL PLAIN, SCRAM or OAUTHBEARER through an OIDC token endpoint (broker-connection.ts); GSSAPI fails
// at once, in one line.
import { BrokerAuthenticationError, openBrokerConnection } from './broker-connection.js';
import { type BrokerSecurity, brokerSecurity } from './broker-security.js';
import {
  type ConfigResource,
  DescribeConfigsDecodeError,
  decodeDescribeConfigsResponse,
  encodeDescribeConfigsRequest,
  errorName,
  RESOURCE_TYPE,
  type ResourceResult,
} from './describe-configs-codec.js';

export { BrokerAuthenticationError } from './broker-connection.js';
export { UnsupportedSecurityError } from './broker-security.js';
export { type ConfigResource, RESOURCE_TYPE } from './describe-configs-codec.js';

/** A broker as cluster metadata lists it. */
export interface BrokerAddress {
  id: number;
  host: string;
  port: number;
}

export interface DescribeConfigsOptions {
  /** `host:port` of the bootstrap brokers (librdkafka's bootstrap.servers), tried in turn for topics. */
  bootstrap: readonly string[];
  clientId: string;
  /** For each broker tried: connecting, sending and the whole answer. */
  timeoutMs?: number;
  /** The clients' librdkafka properties: `security.protocol`, `sasl.*` and `ssl.*` are spoken here too. */
  properties?: Readonly<Record<string, string | number | boolean>>;
  /**
   * Every broker and where it listens (from librdkafka's metadata). A BROKER resource is answered only by
   * the broker it names (its dynamic and static settings are its own), so it is sent there.
   */
  brokers?: readonly BrokerAddress[];
}

export interface ResourceConfigs {
  type: number;
  name: string;
  /** Effective values, defaults included. Sensitive settings (null values) are left out. */
  configs: Record<string, string>;
}

/** No broker gave an answer (each attempt's failure is in the message and in `cause`). */
export class BrokersUnreachableError extends Error {
  override name = 'BrokersUnreachableError';
  readonly retriable = true;
}

export interface ResourceFailure {
  type: number;
  name: string;
  code: number;
  message: string | null;
}

/** The broker answered, but refused one or more resources (a topic that does not exist, say). */
export class DescribeConfigsError extends Error {
  override name = 'DescribeConfigsError';
  /** The first failure's Kafka error code (librdkafka's positive codes are the same numbers). */
  readonly code: number;
  readonly retriable: boolean;

  constructor(readonly failures: readonly ResourceFailure[]) {
    super(`cannot describe the configs of ${failures.map(describeFailure).join('; ')}`);
    this.code = failures[0]?.code ?? -1;
    // A topic just created may not have reached the broker asked yet; a timeout may pass.
    this.retriable = failures.every((f) => f.code === 3 || f.code === 7);
  }
}

function resourceLabel(type: number, name: string): string {
  if (type === RESOURCE_TYPE.TOPIC) return `topic "${name}"`;
  if (type === RESOURCE_TYPE.BROKER) return `broker ${name}`;
  return `resource ${type}/"${name}"`;
}

function describeFailure(f: ResourceFailure): string {
  return `${resourceLabel(f.type, f.name)}: ${errorName(f.code)}${f.message ? ` (${f.message})` : ''}`;
}

/**
 * The configs of every resource, in the order asked. Topic resources go in one request to the first
 * bootstrap broker that answers; broker resources each to their own broker. Throws DescribeConfigsError
 * naming every refused resource, BrokersUnreachableError when no broker answers.
 */
export async function describeConfigs(
  resources: readonly ConfigResource[],
  { bootstrap, clientId, timeoutMs = 10_000, properties, brokers = [] }: DescribeConfigsOptions,
): Promise<ResourceConfigs[]> {
  // Before connecting anywhere: a mechanism not spoken here fails at once, not per broker.
  const security = brokerSecurity(properties);
  if (resources.length === 0) return [];
  const byBroker = new Map<number, ConfigResource[]>();
  const anyBroker: ConfigResource[] = [];
  for (const resource of resources) {
    if (resource.type !== RESOURCE_TYPE.BROKER) {
      anyBroker.push(resource);
      continue;
    }
    const id = Number(resource.name);
    byBroker.set(id, [...(byBroker.get(id) ?? []), resource]);
  }

  const requests: Promise<ResourceResult[]>[] = [];
  if (anyBroker.length > 0)
    requests.push(askInTurn(bootstrap.map(parseAddress), anyBroker, clientId, timeoutMs, security));
  for (const [id, own] of byBroker) {
    const broker = brokers.find((b) => b.id === id);
    if (broker === undefined)
      throw new Error(
        `broker ${id} is not in the cluster metadata (brokers: ${brokers.map((b) => b.id).join(', ') || 'none given'})`,
      );
    requests.push(askInTurn([{ host: broker.host, port: broker.port }], own, clientId, timeoutMs, security));
  }
  const results = (await Promise.all(requests)).flat();

  const failures = results
    .filter((r) => r.errorCode !== 0)
    .map((r) => ({ type: r.type, name: r.name, code: r.errorCode, message: r.errorMessage }));
  if (failures.length > 0) throw new DescribeConfigsError(failures);
  return resources.map((resource) => {
    const result = results.find((r) => r.type === resource.type && r.name === resource.name);
    if (result === undefined)
      throw new DescribeConfigsDecodeError(
        `the answer has no result for ${resourceLabel(resource.type, resource.name)}`,
      );
    const configs: Record<string, string> = {};
    for (const entry of result.configs) if (entry.value !== null) configs[entry.name] = entry.value;
    return { type: result.type, name: result.name, configs };
  });
}

/** `host:port`, `[v6]:port`, or either after librdkafka's optional `PROTOCOL://`. */
export function parseAddress(text: string): { host: string; port: number } {
  const bare = text.trim().replace(/^[A-Za-z_]+:\/\//, '');
  const match = /^\[([^\]]+)\]:(\d+)$/.exec(bare) ?? /^([^:]+):(\d+)$/.exec(bare);
  if (!match) throw new Error(`broker address "${text}": expected host:port`);
  return { host: match[1]!, port: Number(match[2]) };
}

/** One request per address, in turn, until one answers; every failure is kept for the error. */
async function askInTurn(
  addresses: readonly { host: string; port: number }[],
  resources: readonly ConfigResource[],
  clientId: string,
  timeoutMs: number,
  security: BrokerSecurity,
): Promise<ResourceResult[]> {
  const failures: Error[] = [];
  for (const { host, port } of addresses) {
    // Any int32 will do: one request per connection, checked against the answer's.
    const correlationId = Math.floor(Math.random() * 0x7fffffff);
    try {
      const connection = await openBrokerConnection({ host, port, clientId, security, timeoutMs });
      let payload: Buffer;
      try {
        payload = await connection.exchange(
          encodeDescribeConfigsRequest({ correlationId, clientId, resources }),
        );
      } finally {
        connection.close();
      }
      const response = decodeDescribeConfigsResponse(payload);
      if (response.correlationId !== correlationId)
        throw new DescribeConfigsDecodeError(
          `answer to correlation id ${response.correlationId}, expected ${correlationId}`,
        );
      return response.results;
    } catch (error) {
      // Wrong credentials or an untrusted certificate: every broker will say the same.
      if (error instanceof BrokerAuthenticationError)
        throw new BrokerAuthenticationError(`${host}:${port}: ${error.message}`, { cause: error });
      failures.push(new Error(`${host}:${port}: ${(error as Error).message}`, { cause: error }));
    }
  }
  throw new BrokersUnreachableError(
    `DescribeConfigs: no broker answered (${failures.map((f) => f.message).join('; ') || 'no broker address'})`,
    { cause: new AggregateError(failures) },
  );
}
