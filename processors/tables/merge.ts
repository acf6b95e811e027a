// The field-level, event-time last-writer-wins merge behind `entity.<name>.latest` (docs/design.md
// "tables"). Pure: the state is plain JSON, so the stage's changelog-backed store can hold it.
//
// The state is a function of the *set* of events applied, whatever their order, and applying an
// event twice changes nothing, so the stage may run at-least-once and read streams that are not
// ordered per entity. How:
// - a version is (webhook.date as an instant, webhook id bytewise); commission fields are ordered
//   by (commission.statusDate, webhook.date, webhook id) instead;
// - a deletion keeps its version as a marker; events not newer than the newest deletion are
//   ignored for good, so a late `UserAdded` cannot resurrect a deleted user, and a newer add starts
//   the entity again from its own fields only;
// - because commission fields are ordered by another clock than deletions, one field may have to
//   remember more than its current winner: a candidate that loses now may win once a deletion
//   removes the winner. Each field keeps the candidates no other candidate beats on both clocks
//   (a Pareto frontier: in practice one, rarely two).
import { flattenJsonFast, type Leaves } from '../dedupe-router/fast-json.js';
import { flattenFields } from '../dedupe-router/field-paths.js';
import { parseInstant } from '../dedupe-router/instant.js';
import { isJsonObject, parseJsonText, scalarText } from '../dedupe-router/parse-body.js';

/** The parts of an entity event (processors/dedupe-router/entity-event.ts) the merge reads. */
export interface MergeEvent {
  readonly webhookId: string;
  readonly entity: string;
  readonly deleted: boolean;
  /** webhook.date, epoch ms. */
  readonly occurredAt: number;
  /** Dotted paths the delivery carried. */
  readonly fields: readonly string[];
  /** The record as lossless JSON text; the fields' values are read from it. */
  readonly data: string;
}

/** When a delivery happened: webhook.date, ties broken by webhook id bytewise. */
export interface Version {
  readonly at: number;
  readonly webhookId: string;
}

/** One delivery's value for a field. */
export interface Candidate extends Version {
  /** The value as text (`210.10`, `commissionReceived`, `true`); null for a JSON null. */
  readonly value: string | null;
  /** For ordered fields: the ordering instant (commission.statusDate), null when not carried. */
  readonly orderAt?: number | null;
}

export interface EntityState {
  /** The newest deletion, if any. */
  readonly deletedAt: Version | null;
  /** The newest non-deletion event newer than `deletedAt`: the entity exists iff this is set. */
  readonly seenAt: Version | null;
  /** Per field path, the candidates that can still win (see the note at the top). */
  readonly fields: Readonly<Record<string, readonly Candidate[]>>;
}

/** The table's value for a key: dotted path → value text. Null: deleted (a tombstone). */
export type TableFields = Record<string, string | null>;

/**
 * Which fields are ordered by a clock of their own, e.g. commission fields by
 * `commission.statusDate`: returns the path of the instant that orders `path`, or undefined.
 */
export type MergePolicy = (path: string) => string | undefined;

/** Every field ordered by its delivery's version. */
export const BY_DELIVERY: MergePolicy = () => undefined;

/** EnergySwitch: `commission` and its fields are ordered by commission.statusDate first. */
export const ENERGY_SWITCH: MergePolicy = (path) =>
  path === 'commission' || path.startsWith('commission.') ? 'commission.statusDate' : undefined;

export function mergePolicyFor(entity: string): MergePolicy {
  return entity === 'EnergySwitch' ? ENERGY_SWITCH : BY_DELIVERY;
}

const NOT_YET = Symbol('not computed yet');

/**
 * A state the merge made. Its JSON is an EntityState's (own properties: deletedAt, seenAt, fields, in
 * that order); its table value is computed once and kept with it, cheaper than a WeakMap entry per state.
 */
class MergeState implements EntityState {
  #latest: EntityLatest | null | undefined | typeof NOT_YET = NOT_YET;

  constructor(
    readonly deletedAt: Version | null,
    readonly seenAt: Version | null,
    readonly fields: Readonly<Record<string, readonly Candidate[]>>,
  ) {}

  get latest(): EntityLatest | null | undefined {
    if (this.#latest === NOT_YET) this.#latest = computeLatest(this);
    return this.#latest;
  }
}

export const EMPTY_STATE: EntityState = new MergeState(null, null, {});

const utf8 = new TextEncoder();

/** Orders versions by instant, then webhook id compared as UTF-8 bytes. */
export function compareVersions(a: Version, b: Version): number {
  if (a.at !== b.at) return a.at < b.at ? -1 : 1;
  if (a.webhookId === b.webhookId) return 0;
  return Buffer.compare(utf8.encode(a.webhookId), utf8.encode(b.webhookId));
}

/** Orders candidates of one field: ordering instant first (absent = oldest), then version. */
export function compareCandidates(a: Candidate, b: Candidate): number {
  const ao = a.orderAt ?? Number.NEGATIVE_INFINITY;
  const bo = b.orderAt ?? Number.NEGATIVE_INFINITY;
  if (ao !== bo) return ao < bo ? -1 : 1;
  return compareVersions(a, b);
}

export interface MergeResult {
  readonly state: EntityState;
  /** The state differs: persist it. */
  readonly stateChanged: boolean;
  /** The table value differs: emit it (a tombstone when tableFields(state) is null). */
  readonly tableChanged: boolean;
}

/**
 * Applies one entity event to a key's state (undefined: nothing known yet). Never mutates `state`.
 * The event's `data` must be JSON text (the router always writes it so).
 */
export function applyEvent(
  state: EntityState | undefined,
  event: MergeEvent,
  policy: MergePolicy = mergePolicyFor(event.entity),
): MergeResult {
  const before = state ?? EMPTY_STATE;
  const after = event.deleted ? applyDeletion(before, event) : applyUpdate(before, event, policy);
  if (after === before) return { state: before, stateChanged: false, tableChanged: false };
  return {
    state: after,
    stateChanged: true,
    // The whole row, not only its fields: a newer delivery that repeats the values still moves the row's
    // occurredAt and webhookId, or the table's last row would depend on the order deliveries arrived in.
    tableChanged: !sameRow(latestValue(before), latestValue(after)),
  };
}

function applyDeletion(state: EntityState, event: MergeEvent): EntityState {
  const version: Version = { at: event.occurredAt, webhookId: event.webhookId };
  if (state.deletedAt !== null && compareVersions(version, state.deletedAt) <= 0) return state;
  const fields = nullRecord<readonly Candidate[]>();
  for (const [path, candidates] of Object.entries(state.fields)) {
    const kept = candidates.filter((c) => compareVersions(c, version) > 0);
    if (kept.length > 0) fields[path] = kept;
  }
  const seenAt = state.seenAt !== null && compareVersions(state.seenAt, version) > 0 ? state.seenAt : null;
  return new MergeState(version, seenAt, fields);
}

function applyUpdate(state: EntityState, event: MergeEvent, policy: MergePolicy): EntityState {
  const version: Version = { at: event.occurredAt, webhookId: event.webhookId };
  // Not newer than the deletion: it happened to an entity that is gone since.
  if (state.deletedAt !== null && compareVersions(version, state.deletedAt) <= 0) return state;
  const seenAt = state.seenAt === null || compareVersions(version, state.seenAt) > 0 ? version : state.seenAt;
  // Not newer than the entity's newest delivery (one delivered late, or read again after a rewind), it
  // usually changes nothing, which the versions alone can tell: its data is then not read.
  if (seenAt === state.seenAt && losesEveryField(state, event.fields, version, policy)) return state;

  readLeaves(event);
  let orderCache: Map<string, number | null> | undefined;
  // Copied at the first field that changes: an event that changes none (a retry) copies nothing.
  let fields: Record<string, readonly Candidate[]> | undefined;
  const paths = event.fields;
  for (let n = 0; n < paths.length; n++) {
    const path = paths[n]!;
    const leaf = leafIndex(path, n);
    if (leaf < 0) continue;
    const orderPath = policy(path);
    const value = leaves.values[leaf]!;
    let candidate: Candidate;
    if (orderPath === undefined) {
      candidate = { at: version.at, webhookId: version.webhookId, value };
    } else {
      orderCache ??= new Map();
      let orderAt = orderCache.get(orderPath);
      if (orderAt === undefined) {
        const at = leafIndex(orderPath, 0);
        const text = at < 0 ? undefined : leaves.values[at];
        orderAt = typeof text === 'string' ? (parseInstant(text) ?? null) : null;
        orderCache.set(orderPath, orderAt);
      }
      // The same keys in the same order as before: the changelog's JSON stays byte for byte.
      candidate = { at: version.at, webhookId: version.webhookId, value, orderAt };
    }
    const next = addToFrontier(ownField(fields ?? state.fields, path) ?? [], candidate);
    if (next !== undefined) {
      fields ??= Object.assign(nullRecord<readonly Candidate[]>(), state.fields);
      fields[path] = next;
    }
  }
  if (fields !== undefined) return new MergeState(state.deletedAt, seenAt, fields);
  // Only seenAt moved: the fields are shared, not copied (a state is never mutated).
  return seenAt !== state.seenAt ? new MergeState(state.deletedAt, seenAt, state.fields) : state;
}

/**
 * True when a delivery of `version` changes none of `fields` whatever its values: each is ordered by its
 * version (not by a clock read from the data) and already has a candidate at least as new. addToFrontier
 * keeps such a field as it is: a candidate without an ordering instant is, on both clocks, no newer than
 * one of at least its version.
 */
function losesEveryField(
  state: EntityState,
  fields: readonly string[],
  version: Version,
  policy: MergePolicy,
): boolean {
  for (let n = 0; n < fields.length; n++) if (policy(fields[n]!) !== undefined) return false;
  for (let n = 0; n < fields.length; n++) {
    const frontier = ownField(state.fields, fields[n]!);
    if (frontier === undefined || !hasAtLeast(frontier, version)) return false;
  }
  return true;
}

function hasAtLeast(frontier: readonly Candidate[], version: Version): boolean {
  for (let k = 0; k < frontier.length; k++) if (compareVersions(frontier[k]!, version) >= 0) return true;
  return false;
}

/** A field's candidates; never an inherited property (`constructor` of a state parsed from JSON). */
function ownField(
  fields: Readonly<Record<string, readonly Candidate[]>>,
  path: string,
): readonly Candidate[] | undefined {
  // The merge's own records have no prototype, so nothing inherited to tell apart: one lookup, not two.
  if (Object.getPrototypeOf(fields) === null) return fields[path];
  return Object.hasOwn(fields, path) ? fields[path] : undefined;
}

/**
 * Adds a candidate unless one already there is at least as new on both clocks; drops those it is
 * at least as new as on both. Undefined when nothing changes.
 */
function addToFrontier(frontier: readonly Candidate[], candidate: Candidate): Candidate[] | undefined {
  // A frontier of none or one (nearly every field): the array made at its size, nothing sorted.
  if (frontier.length === 0) return [candidate];
  if (frontier.length === 1) {
    const c = frontier[0]!;
    const byVersion = compareVersions(c, candidate);
    const byOrder = compareCandidates(c, candidate);
    if (byVersion >= 0 && byOrder >= 0) return undefined;
    if (byVersion <= 0 && byOrder <= 0) return [candidate];
    // Here byVersion is not 0 (equal versions fall in one of the cases above): its order is the sort's.
    return byVersion < 0 ? [c, candidate] : [candidate, c];
  }
  const kept: Candidate[] = [];
  for (const c of frontier) {
    const byVersion = compareVersions(c, candidate);
    const byOrder = compareCandidates(c, candidate);
    if (byVersion >= 0 && byOrder >= 0) return undefined;
    if (!(byVersion <= 0 && byOrder <= 0)) kept.push(c);
  }
  kept.push(candidate);
  // Sorted, so that the state is the same whatever order the events came in.
  return kept.sort(compareVersions);
}

/**
 * The leaves of the event being merged (one at a time): paths and values as text, in its data's order.
 * Reused, not made per event.
 */
const leaves: Leaves = { paths: [], values: [], count: 0 };

/** The leaves' indexes by path, for an event with many whose fields are not in its data's order. */
let leafAt: Map<string, number> | undefined;

/** Reads the event's leaves into `leaves` (valid until the next call). */
function readLeaves(event: MergeEvent): void {
  leaves.count = 0;
  leafAt = undefined;
  if (event.fields.length === 0) return;
  // Read from the text in one pass; lossless-json's tree and flattenFields for what that does not take on.
  if (flattenJsonFast(event.data, leaves)) return;
  const record = parseJsonText(event.data);
  if (!isJsonObject(record)) return;
  for (const [path, value] of flattenFields(record)) {
    leaves.paths[leaves.count] = path;
    leaves.values[leaves.count++] = scalarText(value);
  }
}

/**
 * Where `path` is in `leaves` (-1: not a leaf of the data). An event lists its fields in its data's
 * order, so the leaf at the field's own index is tried first; then a search, or for many leaves an index
 * (a search per field would be quadratic).
 */
function leafIndex(path: string, hint: number): number {
  if (hint < leaves.count && leaves.paths[hint] === path) return hint;
  if (leaves.count <= 16) {
    for (let k = 0; k < leaves.count; k++) if (leaves.paths[k] === path) return k;
    return -1;
  }
  if (leafAt === undefined) {
    leafAt = new Map();
    for (let k = 0; k < leaves.count; k++) leafAt.set(leaves.paths[k]!, k);
  }
  return leafAt.get(path) ?? -1;
}

/**
 * The table's value: each field's winning value by dotted path; null when the entity was deleted
 * and nothing newer came; undefined when the state knows nothing (no record to write).
 */
export function tableFields(state: EntityState | undefined): TableFields | null | undefined {
  if (state === undefined || (state.seenAt === null && state.deletedAt === null)) return undefined;
  if (state.seenAt === null) return null;
  return winningValues(state, nullRecord<string | null>());
}

/** Writes each shown field's winning value into `out`, by path in sorted order. */
function winningValues(state: EntityState, out: TableFields): TableFields {
  const winners = new Map<string, Candidate>();
  const fields = state.fields;
  for (const path of Object.keys(fields)) {
    const candidates = fields[path]!;
    let best = candidates[0];
    for (const c of candidates) if (best === undefined || compareCandidates(c, best) > 0) best = c;
    if (best !== undefined) winners.set(path, best);
  }
  // A path and one of its ancestors both set (`user` null by one delivery, `user.id` by another):
  // the newer delivery decides which one the table shows.
  const hidden = new Set<string>();
  const paths = new PathTree(winners.keys());
  for (const [path, c] of winners)
    paths.ancestors(path, (ancestor) => {
      hidden.add(compareVersions(winners.get(ancestor)!, c) > 0 ? path : ancestor);
    });
  for (const path of [...winners.keys()].sort()) {
    if (hidden.has(path)) continue;
    const value = winners.get(path)!.value;
    // A plain object's `__proto__` is its prototype's setter: the field is defined, as a spread would.
    if (path === '__proto__')
      Object.defineProperty(out, path, { value, writable: true, enumerable: true, configurable: true });
    else out[path] = value;
  }
  return out;
}

/**
 * Dotted paths as a tree of their parts, to find which of a path's ancestors (its text up to each dot
 * but a leading one) are paths too in one walk down it. Slicing the path at each dot and looking each
 * prefix up cost its depth times its length: a state 500 levels deep took about 1 s a merge (65–82 ms now).
 */
class PathTree {
  readonly #root: PathNode = { path: undefined, parts: undefined };

  constructor(paths: Iterable<string>) {
    for (const path of paths) {
      let node = this.#root;
      for (const part of path.split('.')) {
        node.parts ??= new Map();
        let next = node.parts.get(part);
        if (next === undefined) {
          next = { path: undefined, parts: undefined };
          node.parts.set(part, next);
        }
        node = next;
      }
      node.path = path;
    }
  }

  /** Calls `found` with each of `path`'s ancestors in the tree, nearest the root first. */
  ancestors(path: string, found: (ancestor: string) => void): void {
    const parts = path.split('.');
    let node: PathNode | undefined = this.#root;
    for (let n = 0; n < parts.length - 1 && node !== undefined; n++) {
      node = node.parts?.get(parts[n]!);
      // The text before a leading dot is no ancestor (a path `.a` has none).
      if (node?.path !== undefined && !(n === 0 && parts[0] === '')) found(node.path);
    }
  }
}

interface PathNode {
  path: string | undefined;
  parts: Map<string, PathNode> | undefined;
}

/** The value of `entity.<name>.latest` (schemas/entity-latest.avsc). */
export interface EntityLatest {
  fields: TableFields;
  /** webhook.date of the newest delivery merged, epoch ms. */
  occurredAt: number;
  /** webhook.id of the newest delivery merged. */
  webhookId: string;
}

/**
 * Each state's table value, once: applyEvent compares the row before and after, the processor writes the
 * row after, and the next event of the key starts from it. A state is never mutated, so its value never
 * goes stale. The merge's own states keep theirs (MergeState); a state from elsewhere (parsed from the
 * changelog) in a WeakMap, so that it drops out with the state.
 */
const latestOfState = new WeakMap<EntityState, EntityLatest | null | undefined>();

/**
 * The table record's value: null is a tombstone; undefined means there is nothing to write. The same
 * object for the same state: read it, never change it.
 */
export function latestValue(state: EntityState | undefined): EntityLatest | null | undefined {
  if (state === undefined) return undefined;
  if (state instanceof MergeState) return state.latest;
  if (latestOfState.has(state)) return latestOfState.get(state);
  const latest = computeLatest(state);
  latestOfState.set(state, latest);
  return latest;
}

function computeLatest(state: EntityState): EntityLatest | null | undefined {
  if (state.seenAt === null) return state.deletedAt === null ? undefined : null;
  // Into a plain object at once (the Avro map's value), not a record without prototype then a copy.
  const fields = winningValues(state, {});
  return { fields, occurredAt: state.seenAt.at, webhookId: state.seenAt.webhookId };
}

/** Whether a state may be dropped before `before` (stream time less the window): see forgettableFrom. */
export function isForgettable(state: EntityState, before: number): boolean {
  const from = forgettableFrom(state);
  return from !== undefined && from < before;
}

/**
 * The time from which a state may be forgotten: 0 for an empty one (it holds nothing), undefined (never)
 * for one with fields or a deletion marker. A marker is kept for good, as the tables are: once it went
 * when its deletion was older than the window of stream time, and stream time is the order the router
 * wrote its partitions in, not the events' set. A replay, whose raw partitions progress unevenly (a sparse
 * one months ahead of a dense one), forgot a marker before a late event older than the deletion came,
 * and brought the entity back where live had kept it deleted (`replay diff` not clean).
 */
export function forgettableFrom(state: EntityState): number | undefined {
  if (state.seenAt !== null || state.deletedAt !== null) return undefined;
  return 0;
}

function sameRow(a: EntityLatest | null | undefined, b: EntityLatest | null | undefined): boolean {
  if (a === b) return true;
  if (!a || !b) return false;
  return a.occurredAt === b.occurredAt && a.webhookId === b.webhookId && sameTable(a.fields, b.fields);
}

function sameTable(a: TableFields | null | undefined, b: TableFields | null | undefined): boolean {
  if (a === b) return true;
  if (!a || !b) return false;
  const ak = Object.keys(a);
  return ak.length === Object.keys(b).length && ak.every((k) => Object.hasOwn(b, k) && a[k] === b[k]);
}

// Paths come from senders' JSON: `__proto__` must be a plain key, not the prototype. Not Object.create(null):
// V8 makes that a dictionary, which Object.assign, spreads, Object.entries and JSON.stringify read several
// times slower than an empty literal whose prototype is taken away (it keeps fast properties).
function nullRecord<T>(): Record<string, T> {
  return Object.setPrototypeOf({}, null) as Record<string, T>;
}
