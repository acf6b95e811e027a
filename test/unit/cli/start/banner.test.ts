// What `hookledger start` prints once running: a key only when start made it, never one of the user's.
import { describe, expect, it } from 'vitest';
import { type BannerInput, bannerLines } from '../../../../tools/cli/start/banner.js';

const common: BannerInput = {
  stack: 'local JVMs: Kafka 3.9.1 on 127.0.0.1:9092, ready in 15.0 s',
  topics: 24,
  stages: ['dedupe-router', 'tables'],
  ingestBase: 'http://127.0.0.1:8080',
  ingestOpsBase: 'http://127.0.0.1:9091',
  processorsBase: 'http://127.0.0.1:9090',
  sources: [{ name: 'local', signed: true }],
  logFile: '.hookledger/logs/hookledger.log',
};

describe('the start banner', () => {
  it('shows the webhook URL, the development key, a simulate command and where the logs are', () => {
    const lines = bannerLines({
      ...common,
      development: { source: 'local', keyId: 'dev', key: 'k3y', file: '.hookledger/sources.json' },
    });
    const text = lines.join('\n');
    expect(text).toContain('POST http://127.0.0.1:8080/webhooks/local');
    expect(text).toContain('key       k3y');
    expect(text).toContain('npx hookledger simulate --url http://127.0.0.1:8080/webhooks/local --key k3y');
    expect(text).toContain('.hookledger/logs/hookledger.log');
    // Ingest's metrics are on its ops port, never the webhook port.
    expect(text).toContain('metrics: http://127.0.0.1:9091/metrics  http://127.0.0.1:9090/metrics');
    expect(text).not.toContain('8080/metrics');
    expect(text).toContain('Ctrl-C stops everything');
    expect(lines.length).toBeLessThanOrEqual(8);
  });

  it("names the user's sources and says their keys are theirs, without printing one", () => {
    const text = bannerLines({
      ...common,
      sources: [
        { name: 'energy', signed: true },
        { name: 'sandbox', signed: false },
      ],
      sourcesFrom: 'HOOKLEDGER_SOURCES_FILE /etc/hookledger/sources.json',
    }).join('\n');
    expect(text).toContain('POST http://127.0.0.1:8080/webhooks/energy   (sources: energy, sandbox)');
    expect(text).toContain("your sources' own (HOOKLEDGER_SOURCES_FILE /etc/hookledger/sources.json)");
    expect(text).toContain("--key-file <energy's key file>");
    expect(text).not.toMatch(/--key /);
  });

  it('suggests --unsigned for a source declared "signature": "none"', () => {
    const text = bannerLines({ ...common, sources: [{ name: 'sandbox', signed: false }] }).join('\n');
    expect(text).toContain('simulate --url http://127.0.0.1:8080/webhooks/sandbox --unsigned');
  });
});
