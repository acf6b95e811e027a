// The configured webhook sources (HOOKLEDGER_SOURCES or HOOKLEDGER_SOURCES_FILE), validated once at start.
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { ConfigError } from '../runtime/config.js';
import { renamedVariable } from '../runtime/known-variables.js';

/** A source name is a URL path segment and a metric label; a key id lands in records and metrics. */
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/**
 * A shared key shorter than this is refused: RFC 2104 strongly discourages HMAC keys shorter than the
 * hash's output, 20 bytes for SHA-1. Not more: the key is agreed with the platform at provisioning, and
 * a platform's 20-byte key (the contract's sample deliveries are signed with one) must keep working.
 * `openssl rand -hex 32` makes a better one.
 */
export const MIN_KEY_BYTES = 20;

/** Texts of example configurations (docker-compose's `change-me`, …): a key containing one is refused. */
const PLACEHOLDERS =
  /change-?me|replace-?me|your-?(shared-?)?(key|secret)|example|placeholder|<key>|xxxxxxxx/i;

/** Why a key is refused, without repeating it (the message goes to logs and terminals); undefined: accepted. */
export function weakKey(key: string): string | undefined {
  const bytes = Buffer.byteLength(key, 'utf8');
  if (bytes < MIN_KEY_BYTES)
    return `a key is at least ${MIN_KEY_BYTES} bytes (this one has ${bytes}); generate one with \`openssl rand -hex 32\``;
  if (PLACEHOLDERS.test(key) || new Set(key).size < 8)
    return 'this key is a placeholder, not a secret; generate one with `openssl rand -hex 32`';
  return undefined;
}

/** The variable that lists, by name, the sources allowed to take unsigned deliveries. */
export const UNSIGNED_OPT_IN = 'INGEST_UNSIGNED_SOURCES';

const sourceSchema = z
  .strictObject({
    signature: z.enum(['required', 'none']).default('required'),
    keys: z
      .record(
        z.string().regex(NAME, 'a key id is 1-64 letters, digits, ".", "_" or "-"'),
        // The message must never echo the key itself.
        z
          .string({ error: 'a key is a non-empty string' })
          .min(1, 'a key is a non-empty string')
          .superRefine((key, ctx) => {
            const weak = weakKey(key);
            if (weak !== undefined) ctx.addIssue({ code: 'custom', message: weak });
          }),
      )
      .default({}),
  })
  .superRefine((source, ctx) => {
    const count = Object.keys(source.keys).length;
    if (source.signature === 'required' && count === 0) {
      ctx.addIssue({
        code: 'custom',
        path: ['keys'],
        message: 'needs at least one key (or "signature": "none" to declare the source insecure)',
      });
    }
    if (source.signature === 'none' && count > 0) {
      ctx.addIssue({
        code: 'custom',
        path: ['keys'],
        message: 'a source declared insecure ("signature": "none") takes no keys',
      });
    }
  });

const sourcesSchema = z
  .record(z.string().regex(NAME, 'a source name is 1-64 letters, digits, ".", "_" or "-"'), sourceSchema)
  .refine((sources) => Object.keys(sources).length > 0, { message: 'expected at least one source' });

export interface Source {
  readonly name: string;
  /** "none": an explicitly insecure source, accepted without a signature (warned about at start). */
  readonly signature: 'required' | 'none';
  /** Key id → key bytes. Any of them verifies a delivery, so keys rotate without downtime. */
  readonly keys: ReadonlyMap<string, Buffer>;
}

export type Sources = ReadonlyMap<string, Source>;

const EXPECTED = '{"<name>":{"keys":{"<key id>":"<key>"}}} or {"<name>":{"signature":"none"}}';

/** Parses the sources JSON; `variable` names where it came from in the error message. */
export function parseSources(json: string, variable = 'HOOKLEDGER_SOURCES'): Sources {
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch {
    // The parser's message may quote the text, and the text holds keys: say only that it is not JSON.
    throw new ConfigError(`${variable}: not valid JSON (expected ${EXPECTED})`);
  }
  const result = sourcesSchema.safeParse(raw);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const where = issue.path.map(String).join('.');
    // A bad record key (a source name, a key id) nests the rule that failed.
    const message =
      issue.code === 'invalid_key' ? (issue.issues[0]?.message ?? issue.message) : issue.message;
    throw new ConfigError(`${variable}: ${where ? `${where}: ` : ''}${message} (expected ${EXPECTED})`);
  }
  const sources = new Map<string, Source>();
  for (const [name, source] of Object.entries(result.data)) {
    const keys = new Map(Object.entries(source.keys).map(([id, key]) => [id, Buffer.from(key, 'utf8')]));
    sources.set(name, { name, signature: source.signature, keys });
  }
  return sources;
}

/**
 * Reads the sources from HOOKLEDGER_SOURCES, or from the file HOOKLEDGER_SOURCES_FILE names (secrets
 * mounts); under their old names (HOOKSTREAM_…) while neither new one is set. A source declared
 * `"signature": "none"` must also be named in INGEST_UNSIGNED_SOURCES: an insecure source is a decision
 * made twice, never a typo or a copied example.
 */
export function loadSources(env: NodeJS.ProcessEnv = process.env): Sources {
  const sources = readSources(env);
  const allowed = new Set(
    (env[UNSIGNED_OPT_IN] ?? '')
      .split(',')
      .map((name) => name.trim())
      .filter(Boolean),
  );
  const refused = insecureSources(sources).filter((name) => !allowed.has(name));
  if (refused.length > 0)
    throw new ConfigError(
      `${UNSIGNED_OPT_IN}: source ${refused.map((n) => JSON.stringify(n)).join(', ')} accepts unsigned deliveries ("signature": "none"); name it in ${UNSIGNED_OPT_IN} to allow that, or give it keys`,
    );
  return sources;
}

/** Where the sources are set: each variable (under the name it was found, maybe an old one) and its value. */
export function sourcesSettings(env: NodeJS.ProcessEnv) {
  return {
    inline: renamedVariable(env, 'HOOKLEDGER_SOURCES'),
    file: renamedVariable(env, 'HOOKLEDGER_SOURCES_FILE'),
  };
}

function readSources(env: NodeJS.ProcessEnv): Sources {
  const { inline, file } = sourcesSettings(env);
  if (inline && file) {
    throw new ConfigError(`${file.variable}: set either ${inline.variable} or ${file.variable}, not both`);
  }
  if (file) {
    let text: string;
    try {
      text = readFileSync(file.value, 'utf8');
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? 'unreadable';
      throw new ConfigError(`${file.variable}: cannot read ${JSON.stringify(file.value)} (${code})`);
    }
    return parseSources(text, file.variable);
  }
  if (inline) return parseSources(inline.value, inline.variable);
  throw new ConfigError(
    `HOOKLEDGER_SOURCES: expected ${EXPECTED} (it is not set, nor HOOKLEDGER_SOURCES_FILE)`,
  );
}

/** The names of the sources that accept unsigned deliveries, for the warning at start. */
export function insecureSources(sources: Sources): string[] {
  return [...sources.values()].filter((s) => s.signature === 'none').map((s) => s.name);
}
