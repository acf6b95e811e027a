// Vitest's file order, with the files known to take longest first. Vitest orders files by the durations
// it cached on an earlier run, and a fresh clone has none: it would start the files by size, so the README
// tour (two minutes alone) could start last and the run end on one busy worker. Files are ranked by the
// first entry of `order` their path contains (an entry may be a folder: `test/unit/`), in that order;
// unranked files come last; ties keep vitest's order (cached durations, else size). Groups stay in order.
import { BaseSequencer, type TestSpecification } from 'vitest/node';

export function longestFirst(order: readonly string[]) {
  const rank = (spec: TestSpecification) => {
    const index = order.findIndex((entry) => spec.moduleId.includes(entry));
    return index === -1 ? order.length : index;
  };
  return class LongestFirst extends BaseSequencer {
    override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
      const sorted = await super.sort(files);
      const groupOf = (spec: TestSpecification) => spec.project.config.sequence.groupOrder;
      // A stable sort: vitest's group order stays, and so does its order among files of one rank.
      return sorted
        .map((spec, position) => ({ spec, position }))
        .sort(
          (a, b) =>
            groupOf(a.spec) - groupOf(b.spec) || rank(a.spec) - rank(b.spec) || a.position - b.position,
        )
        .map(({ spec }) => spec);
    }
  };
}
