// Vitest's file order, with the integration files known to take longest first. Vitest orders files by the
// durations it cached on an earlier run, and a fresh clone has none: it would start the files by size, so
// the README tour (two minutes alone) could start last and the run end on one busy worker. Named files go
// first, in the order named; the others keep vitest's order (cached durations, else size).
import { BaseSequencer, type TestSpecification } from 'vitest/node';

export function longestFirst(slowest: readonly string[]) {
  const rank = (spec: TestSpecification) => {
    const index = slowest.findIndex((file) => spec.moduleId.endsWith(file));
    return index === -1 ? slowest.length : index;
  };
  return class LongestFirst extends BaseSequencer {
    override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
      const sorted = await super.sort(files);
      const groupOf = (spec: TestSpecification) => spec.project.config.sequence.groupOrder;
      // A stable sort: vitest's project and group order stays, and so does its order among the unnamed.
      return sorted
        .map((spec, position) => ({ spec, position }))
        .sort(
          (a, b) =>
            groupOf(a.spec) - groupOf(b.spec) ||
            (a.spec.project.name === b.spec.project.name ? rank(a.spec) - rank(b.spec) : 0) ||
            a.position - b.position,
        )
        .map(({ spec }) => spec);
    }
  };
}
