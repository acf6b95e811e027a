// The secured stack's token endpoint as a process of its own, so it runs as long as the stack does
// (`stack up --secure` outlives the command that started it):
//
//   node --import tsx token-endpoint-main.ts <config.json>
//
// The config file (written by secure-stack.ts, mode 600) holds the port, the signing key and the clients.
// SIGTERM or SIGINT closes it.
import { readFileSync } from 'node:fs';
import { startTokenEndpoint, type TokenEndpointOptions } from './token-endpoint.js';

const file = process.argv[2];
if (!file) {
  process.stderr.write('usage: token-endpoint-main.ts <config.json>\n');
  process.exit(2);
}
const options = JSON.parse(readFileSync(file, 'utf8')) as TokenEndpointOptions;
const endpoint = await startTokenEndpoint(options);
process.stdout.write(`${new Date().toISOString()} token endpoint listening on ${endpoint.url}\n`);
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    process.stdout.write(
      `${new Date().toISOString()} token endpoint stopping (${signal}), ${endpoint.issued()} tokens issued\n`,
    );
    void endpoint.close().then(() => process.exit(0));
  });
}
