// The tables stage's state of one entity-stream partition: entity key → merge state (field candidates
// and the deletion marker), in a Map, logged to `entity.<name>.merge-changelog` as JSON.
import { ChangelogKeyValueStore, MapBacking } from '../../runtime/streams/store.js';
import { type EntityState, isForgettable } from './merge.js';

export const MERGE_STORE = 'merge';

const codec = {
  encode: (state: EntityState) => Buffer.from(JSON.stringify(state)),
  decode: (bytes: Buffer) => JSON.parse(bytes.toString('utf8')) as EntityState,
};

export class MergeStore extends ChangelogKeyValueStore<EntityState> {
  readonly map: MapBacking<EntityState>;

  constructor(readonly windowMs: number) {
    const map = new MapBacking<EntityState>();
    super(MERGE_STORE, map, codec);
    this.map = map;
  }

  /**
   * Drops states that only remember a deletion older than the window (a tombstone in the changelog):
   * by then no retry of an older delivery can arrive, so the marker has done its job.
   */
  forgetBefore(streamTime: number): number {
    const before = streamTime - this.windowMs;
    let forgotten = 0;
    for (const [key, state] of this.map.map) {
      if (isForgettable(state, before)) {
        this.delete(key, streamTime);
        forgotten++;
      }
    }
    return forgotten;
  }
}
