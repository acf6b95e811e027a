// A batch of metric updates (a committed transaction's events) summed per series and label set, then
// written into prom-client once per set: prom-client hashes and validates the label set on every
// observe and inc, which cost about a microsecond an event on the router's hot path.
import type { Counter, Histogram } from 'prom-client';

type Labels = Readonly<Record<string, string>>;

interface Pending {
  /** Writes what was gathered since the last flush into prom-client, and forgets it. */
  flush(): void;
}

/**
 * The series one registry's events write. Updates go to the folded series at any time; `flush()`
 * writes them into prom-client, and the stream kit calls it after each batch of events (and after
 * each event outside a transaction), so nothing waits in here while a scrape could read.
 */
export class MetricFold {
  readonly #dirty: Pending[] = [];

  counter<L extends string>(counter: Counter<L>): FoldedCounter<L> {
    return new FoldedCounter(counter, labelNamesOf(counter), this.#dirty);
  }

  histogram<L extends string>(histogram: Histogram<L>): FoldedHistogram<L> {
    return new FoldedHistogram(histogram, labelNamesOf(histogram), this.#dirty);
  }

  flush(): void {
    const dirty = this.#dirty;
    for (let i = 0; i < dirty.length; i++) dirty[i]!.flush();
    dirty.length = 0;
  }
}

/** The label names the metric was made with (prom-client keeps them; its typings do not say so). */
function labelNamesOf(metric: object): readonly string[] {
  const { labelNames } = metric as { labelNames?: readonly string[] };
  if (!Array.isArray(labelNames)) throw new TypeError('a prom-client metric without labelNames');
  return labelNames;
}

const folds = new WeakMap<object, MetricFold>();

/** One fold per registry: the kit's series and each stage's own are flushed together. */
export function metricFoldOf(registry: object): MetricFold {
  let fold = folds.get(registry);
  if (fold === undefined) {
    fold = new MetricFold();
    folds.set(registry, fold);
  }
  return fold;
}

/**
 * Groups by label values, one Map level per label name (no key string built per update). A group
 * keeps the first update's labels: what prom-client gets once per flush.
 */
class Groups<G> {
  readonly #root = new Map<string | undefined, unknown>();
  readonly #all: G[] = [];

  constructor(
    private readonly labelNames: readonly string[],
    private readonly create: (labels: Labels) => G,
  ) {}

  get(labels: Labels): G {
    const names = this.labelNames;
    if (names.length === 0) {
      const only = this.#all[0];
      if (only !== undefined) return only;
      return this.#add(labels);
    }
    let level = this.#root;
    for (let i = 0; i < names.length - 1; i++) {
      const value = labels[names[i]!];
      let next = level.get(value) as Map<string | undefined, unknown> | undefined;
      if (next === undefined) {
        next = new Map();
        level.set(value, next);
      }
      level = next;
    }
    const last = labels[names[names.length - 1]!];
    const found = level.get(last) as G | undefined;
    if (found !== undefined) return found;
    const group = this.#add(labels);
    level.set(last, group);
    return group;
  }

  #add(labels: Labels): G {
    const group = this.create(labels);
    this.#all.push(group);
    return group;
  }

  get all(): readonly G[] {
    return this.#all;
  }

  clear(): void {
    this.#root.clear();
    this.#all.length = 0;
  }
}

/**
 * Increments summed per label set and added once. Exact while every increment has been a whole number
 * (counts): a sum of integers below 2^53 is the same in any order. From a counter's first fraction on,
 * every increment is added at once, after what is pending, in the order prom-client would have had them:
 * once a series holds a fraction, adding 6 and 506 one by one rounds differently from adding 512.
 */
export class FoldedCounter<L extends string> implements Pending {
  readonly #groups: Groups<{ labels: Labels; sum: number }>;
  /** A fraction was seen: nothing is summed any more. */
  #direct = false;

  constructor(
    private readonly counter: Counter<L>,
    labelNames: readonly string[],
    private readonly dirty: Pending[],
  ) {
    this.#groups = new Groups(labelNames, (labels) => ({ labels, sum: 0 }));
  }

  inc(labels: Partial<Record<L, string>>, value = 1): void {
    if (this.#direct || !Number.isInteger(value)) {
      if (!this.#direct) {
        this.flush();
        this.#direct = true;
      }
      this.counter.inc(labels, value);
      return;
    }
    if (this.#groups.all.length === 0) this.dirty.push(this);
    this.#groups.get(labels as Labels).sum += value;
  }

  flush(): void {
    for (const { labels, sum } of this.#groups.all)
      this.counter.inc(labels as Partial<Record<L, string>>, sum);
    this.#groups.clear();
  }
}

/** prom-client's record of one label set of a histogram (lib/histogram.js, 15.x). */
interface HistogramEntry {
  sum: number;
  count: number;
  bucketValues: Record<number, number>;
}

/** What FoldedHistogram reads of prom-client's Histogram beyond its typings. */
interface HistogramInternals {
  hashMap: Record<string, HistogramEntry | undefined>;
  upperBounds: readonly number[];
  sortedLabelNames: readonly string[];
}

/**
 * Observations gathered per label set, in order, and added to prom-client's entry for the set in one
 * pass at flush: the same sum (added value by value, from the entry's own), count and bucket counts
 * that observing them one by one would give. prom-client has no batched observe, so this writes its
 * histogram's entry (the test "metrics folded per transaction" holds it to prom-client's own observe);
 * where the entry is not where 15.x keeps it, it observes value by value.
 */
export class FoldedHistogram<L extends string> implements Pending {
  readonly #groups: Groups<{ labels: Labels; values: number[] }>;
  readonly #internals: HistogramInternals;

  constructor(
    private readonly histogram: Histogram<L>,
    labelNames: readonly string[],
    private readonly dirty: Pending[],
  ) {
    this.#groups = new Groups(labelNames, (labels) => ({ labels, values: [] }));
    this.#internals = histogram as unknown as HistogramInternals;
  }

  observe(labels: Partial<Record<L, string>>, value: number): void {
    // prom-client's own check, made where the event is (not at the flush).
    if (!Number.isFinite(value)) throw new TypeError(`Value is not a valid number: ${value}`);
    if (this.#groups.all.length === 0) this.dirty.push(this);
    this.#groups.get(labels as Labels).values.push(value);
  }

  flush(): void {
    for (const { labels, values } of this.#groups.all) this.#add(labels, values);
    this.#groups.clear();
  }

  #add(labels: Labels, values: readonly number[]): void {
    const promLabels = labels as Partial<Record<L, string>>;
    // The first observation through prom-client: it validates the labels and makes the entry.
    this.histogram.observe(promLabels, values[0]!);
    if (values.length === 1) return;
    const entry = this.#entry(labels);
    if (entry === undefined) {
      for (let i = 1; i < values.length; i++) this.histogram.observe(promLabels, values[i]!);
      return;
    }
    const bounds = this.#internals.upperBounds;
    const counts = new Array<number>(bounds.length).fill(0);
    let sum = entry.sum;
    for (let i = 1; i < values.length; i++) {
      const value = values[i]!;
      sum += value;
      let b = 0;
      while (b < bounds.length && value > bounds[b]!) b++;
      if (b < bounds.length) counts[b]!++;
    }
    entry.sum = sum;
    entry.count += values.length - 1;
    for (let b = 0; b < bounds.length; b++) if (counts[b]! > 0) entry.bucketValues[bounds[b]!]! += counts[b]!;
  }

  /** prom-client's entry for the label set (its key: `name:value,` per sorted label name). */
  #entry(labels: Labels): HistogramEntry | undefined {
    const { hashMap, sortedLabelNames } = this.#internals;
    if (hashMap === undefined || sortedLabelNames === undefined) return undefined;
    let hash = '';
    for (const name of sortedLabelNames) if (labels[name] !== undefined) hash += `${name}:${labels[name]},`;
    const entry = hashMap[hash];
    return typeof entry?.sum === 'number' && typeof entry.bucketValues === 'object' ? entry : undefined;
  }
}
