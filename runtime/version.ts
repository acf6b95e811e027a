// The version of the package, as `hookledger --version`, the start-up log line and the
// hookledger_build_info metric report it. The JSON import resolves in dist too: tsc copies package.json.
import manifest from '../package.json' with { type: 'json' };

export const VERSION: string = manifest.version;
