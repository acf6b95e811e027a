// `hookledger_build_info{version,node} 1` on a service's metrics registry, as Prometheus exporters do:
// dashboards and alerts join on it to say which release runs where.
import { Gauge, type Registry } from 'prom-client';
import { VERSION } from './version.js';

export function registerBuildInfo(registry: Registry, version: string = VERSION): void {
  new Gauge({
    name: 'hookledger_build_info',
    help: 'Always 1; the labels say which hookledger release and Node.js version run.',
    labelNames: ['version', 'node'] as const,
    registers: [registry],
    // Several processes' series summed into one /metrics (ingest's workers): still 1.
    aggregator: 'max',
  }).set({ version, node: process.version }, 1);
}
