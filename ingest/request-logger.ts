// Each request's logger, built only when a line is written. Fastify gives every request a pino child
// bound to its id; building one (its bindings serialised, redaction set up) was 3 % of ingest's main
// thread under load (docs/benchmarks.md, "Ingest's per-request work"), for lines the webhook route
// writes at debug only: at info, most requests write none.
import type { FastifyBaseLogger, FastifyServerOptions } from 'fastify';
import type { Bindings, ChildLoggerOptions, Level } from 'pino';
import type { Logger } from '../runtime/log.js';

type Write = (...args: unknown[]) => void;

/** A pino child in waiting: the same lines as `parent.child(bindings)`, made on the first one written. */
export class LazyRequestLogger implements FastifyBaseLogger {
  #child: Logger | undefined;

  constructor(
    private readonly parent: Logger,
    private readonly bindings: Bindings,
  ) {}

  get level(): string {
    return this.#child?.level ?? this.parent.level;
  }

  set level(level: string) {
    this.#real().level = level;
  }

  fatal(...args: unknown[]): void {
    this.#write('fatal', args);
  }

  error(...args: unknown[]): void {
    this.#write('error', args);
  }

  warn(...args: unknown[]): void {
    this.#write('warn', args);
  }

  info(...args: unknown[]): void {
    this.#write('info', args);
  }

  debug(...args: unknown[]): void {
    this.#write('debug', args);
  }

  trace(...args: unknown[]): void {
    this.#write('trace', args);
  }

  silent(): void {}

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.#real().child(bindings, options);
  }

  #real(): Logger {
    this.#child ??= this.parent.child(this.bindings);
    return this.#child;
  }

  #write(level: Level, args: unknown[]): void {
    // Until a level is set on this request's logger, it is the parent's: a disabled line builds nothing.
    if (this.#child === undefined && !this.parent.isLevelEnabled(level)) return;
    const child = this.#real();
    (child[level] as Write).apply(child, args);
  }
}

/** Fastify's childLoggerFactory: lazy children, except for a route with logger options of its own. */
export const lazyChildLoggerFactory: NonNullable<FastifyServerOptions['childLoggerFactory']> = (
  logger,
  bindings,
  options,
) =>
  Object.keys(options).length > 0
    ? logger.child(bindings, options)
    : new LazyRequestLogger(logger as Logger, bindings);
