// hookledger_build_info says which release runs, the same version `hookledger --version` prints.
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createIngestMetrics } from '../../../ingest/metrics.js';
import manifest from '../../../package.json' with { type: 'json' };
import { registerBuildInfo } from '../../../runtime/build-info.js';
import { VERSION } from '../../../runtime/version.js';

describe('hookledger_build_info', () => {
  it('is 1 with the package version and the Node.js version as labels', async () => {
    const registry = new Registry();
    registerBuildInfo(registry);
    expect(await registry.metrics()).toContain(
      `hookledger_build_info{version="${manifest.version}",node="${process.version}"} 1`,
    );
    expect(VERSION).toBe(manifest.version);
  });

  it("is on ingest's registry (the processors' is checked on a running process: processors-ops)", async () => {
    const { registry } = createIngestMetrics({ defaultMetrics: false });
    expect(await registry.metrics()).toContain(`hookledger_build_info{version="${VERSION}"`);
  });
});
