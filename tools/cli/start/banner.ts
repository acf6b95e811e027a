// The short block `hookledger start` prints once everything runs: where to send webhooks, with which
// key, a command that sends some, and where the logs are. A key is shown only when start made it.

export interface SourceShown {
  name: string;
  /** False for a source declared `"signature": "none"`. */
  signed: boolean;
}

/** The development source `start` created itself (never one of the user's). */
export interface DevelopmentKey {
  source: string;
  keyId: string;
  key: string;
  /** Where it is kept. */
  file: string;
}

export interface BannerInput {
  /** One line: what runs the stack, and where. */
  stack: string;
  topics: number;
  stages: readonly string[];
  /** http(s)://host:port of ingest. */
  ingestBase: string;
  /** http://host:port of ingest's ops server (/metrics, which is never on the webhook port; /readyz). */
  ingestOpsBase: string;
  /** http://host:port of the processors' ops server. */
  processorsBase: string;
  sources: readonly SourceShown[];
  /** Set only when the sources are start's own development source. */
  development?: DevelopmentKey;
  /** Where the user's sources came from (HOOKLEDGER_SOURCES, or the file), when they are the user's. */
  sourcesFrom?: string;
  logFile: string;
}

/** The block's lines (the status line follows it). */
export function bannerLines(input: BannerInput): string[] {
  const { development, sources, ingestBase } = input;
  const first = sources[0];
  const url = (name: string) => `${ingestBase}/webhooks/${name}`;
  const others = sources.length > 1 ? `   (sources: ${sources.map((s) => s.name).join(', ')})` : '';
  const lines = [
    `hookledger is running: ingest, ${listed(input.stages)} on ${input.topics} topics`,
    `  stack     ${input.stack}`,
    `  webhooks  POST ${first ? url(first.name) : `${ingestBase}/webhooks/<source>`}${others}`,
  ];
  if (development) {
    lines.push(
      `  key       ${development.key}   (source "${development.source}", key id "${development.keyId}", kept in ${development.file})`,
      `  try       npx hookledger simulate --url ${url(development.source)} --key ${development.key} --count 300 --duplicate-rate 0.2`,
    );
  } else if (first) {
    lines.push(
      `  keys      your sources' own (${input.sourcesFrom ?? 'HOOKLEDGER_SOURCES'}); start never prints them`,
      `  try       npx hookledger simulate --url ${url(first.name)} ${first.signed ? `--key-file <${first.name}'s key file>` : '--unsigned'} --count 300`,
    );
  }
  lines.push(
    `  logs      ${input.logFile}   metrics: ${input.ingestOpsBase}/metrics  ${input.processorsBase}/metrics`,
    'Ctrl-C stops everything this command started.',
  );
  return lines;
}

/** `a`, `a and b`, `a, b and c`. */
function listed(items: readonly string[]): string {
  return items.length <= 1 ? items.join('') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`;
}
