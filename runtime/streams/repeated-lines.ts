// A failure that repeats for every record (a bug that throws on each, a registry refusing every schema)
// would write a log line per record: thousands a second, each with its stack. The first of a kind is
// logged in full once per window; the rest go to debug, and the next full line says how many it held back.
// Every one is still counted in the metrics (hookledger_stream_failed_records_total).

/** Kinds remembered at most: beyond, the oldest windows are forgotten (their next line is logged in full). */
const MAX_KINDS = 1_000;

export class RepeatedLines {
  readonly #windows = new Map<string, { since: number; heldBack: number }>();

  constructor(
    readonly windowMs = 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Whether this occurrence of `kind` is logged in full, and how many of its kind were held back since the
   * last one that was.
   */
  admit(kind: string): { full: boolean; heldBack: number } {
    const at = this.now();
    const window = this.#windows.get(kind);
    if (window !== undefined && at - window.since < this.windowMs) {
      window.heldBack++;
      return { full: false, heldBack: 0 };
    }
    this.#windows.delete(kind);
    if (this.#windows.size >= MAX_KINDS) this.#windows.delete(this.#windows.keys().next().value!);
    this.#windows.set(kind, { since: at, heldBack: 0 });
    return { full: true, heldBack: window?.heldBack ?? 0 };
  }
}
