// `hookledger --version`: the version of the package this CLI belongs to.
// The JSON import resolves at build time too: tsc copies package.json into dist beside the compiled tools.
import manifest from '../../package.json' with { type: 'json' };

export const VERSION: string = manifest.version;
