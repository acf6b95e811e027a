// replay's --trigger filter compares names exactly: a name no contract trigger has (a typo, another case)
// would replay nothing without a word. Such a name is warned about, not refused: the platform can enable
// triggers beyond its contract's list.
import { CONTRACT_TRIGGERS } from '../../processors/dedupe-router/trigger-label.js';

/** One warning per --trigger name that is not one of the contract's triggers. */
export function unknownTriggerLines(triggers: readonly string[]): string[] {
  const known = new Set<string>(CONTRACT_TRIGGERS);
  return triggers
    .filter((name) => !known.has(name))
    .map((name) => {
      const alike = CONTRACT_TRIGGERS.find((t) => t.toLowerCase() === name.toLowerCase());
      const hint =
        alike === undefined ? `the contract's: ${CONTRACT_TRIGGERS.join(', ')}` : `did you mean ${alike}?`;
      return `--trigger ${name} is not a trigger of the platform's contract (${hint}): only deliveries whose webhook.trigger is exactly "${name}" are replayed`;
    });
}

/** The summary's line when the filter let nothing through: what was asked, and how much it skipped. */
export function nothingMatchedLine(triggers: readonly string[], skipped: number): string {
  return `no record matched --trigger ${triggers.join(', ')}: nothing replayed (${skipped} other record(s) in range skipped)`;
}
