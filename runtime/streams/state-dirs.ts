// The state directories of one stream app instance: one per task, opened on first assignment and kept
// open (a partition given back later restores only its tail) until the app closes.
import { TaskStateDir, taskStateDirPath } from './state-dir.js';

export class StateDirs {
  readonly #open = new Map<string, TaskStateDir>();

  constructor(
    readonly root: string,
    readonly appId: string,
    readonly instanceId: string,
  ) {}

  /** Where the task's directory is (opened or not). */
  path(topic: string, partition: number): string {
    const { root, appId, instanceId } = this;
    return taskStateDirPath({ root, appId, instanceId, topic, partition });
  }

  /** The task's directory, opened (and locked) on first use. */
  acquire(topic: string, partition: number): TaskStateDir {
    const key = `${topic}\u0000${partition}`;
    let dir = this.#open.get(key);
    if (dir === undefined) {
      dir = new TaskStateDir({
        root: this.root,
        appId: this.appId,
        instanceId: this.instanceId,
        topic,
        partition,
      });
      this.#open.set(key, dir);
    }
    return dir;
  }

  /** The task's directory is open and an asynchronous write is in flight in it (TaskStateDir.writing). */
  writing(topic: string, partition: number): boolean {
    return this.#open.get(`${topic}\u0000${partition}`)?.writing ?? false;
  }

  /** Bytes on disk of every open task directory. */
  sizeOnDisk(): number {
    let bytes = 0;
    for (const dir of this.#open.values()) bytes += dir.sizeOnDisk();
    return bytes;
  }

  async closeAll(): Promise<void> {
    const dirs = [...this.#open.values()];
    this.#open.clear();
    await Promise.all(dirs.map((dir) => dir.close()));
  }
}
