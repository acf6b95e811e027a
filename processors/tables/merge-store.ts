// The tables stage's state of one entity-stream partition: entity key → merge state (field candidates
// and the deletion marker), in a Map, logged to `entity.<name>.merge-changelog` as JSON.
import { LmdbBacking } from '../../runtime/streams/lmdb-backing.js';
import type { TaskStateDir } from '../../runtime/streams/state-dir.js';
import { ChangelogKeyValueStore, MapBacking } from '../../runtime/streams/store.js';
import { type EntityState, forgettableFrom, isForgettable } from './merge.js';

export const MERGE_STORE = 'merge';

const codec = {
  encode: (state: EntityState) => Buffer.from(JSON.stringify(state)),
  decode: (bytes: Buffer) => JSON.parse(bytes.toString('utf8')) as EntityState,
};

export class MergeStore extends ChangelogKeyValueStore<EntityState> {
  /** In memory (a Map), or on disk over the task's state directory. */
  readonly state: MapBacking<EntityState> | LmdbBacking<EntityState>;

  constructor(
    readonly windowMs: number,
    stateDir?: TaskStateDir,
  ) {
    const state =
      stateDir === undefined
        ? new MapBacking<EntityState>()
        : new LmdbBacking<EntityState>(stateDir, MERGE_STORE, codec, forgettableFrom);
    super(MERGE_STORE, state, codec);
    this.state = state;
  }

  /** The keys that may be forgettable: on disk only those due (an ordered index), in memory all. */
  #candidates(before: number): Iterable<string> {
    return this.state instanceof MapBacking ? [...this.state.map.keys()] : this.state.dueBefore(before);
  }

  /**
   * Drops the states that hold nothing (merge.ts forgettableFrom), each as a tombstone in the changelog.
   * Deletion markers are kept for good, so that the set of events decides a row in any order.
   */
  forgetBefore(streamTime: number): number {
    const before = streamTime - this.windowMs;
    let forgotten = 0;
    for (const key of this.#candidates(before)) {
      const state = this.get(key);
      if (state !== undefined && isForgettable(state, before)) {
        this.delete(key, streamTime);
        forgotten++;
      }
    }
    return forgotten;
  }
}
