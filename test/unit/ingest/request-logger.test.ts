// A request's lazy logger writes exactly the lines its eager pino child would, and builds nothing for
// lines its level leaves out.
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { LazyRequestLogger, lazyChildLoggerFactory } from '../../../ingest/request-logger.js';
import { createLogger } from '../../../runtime/log.js';

function capture(level: string) {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({
    level,
    destination: { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) },
  });
  const withoutTime = () => lines.map(({ time: _time, ...line }) => line);
  return { logger, lines: withoutTime };
}

const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const;
const BROKEN = new Error('broken');

/** Every way the code base calls a log method: a message, an object and a message, secrets to redact. */
function writeEverything(log: Pick<LazyRequestLogger, (typeof LEVELS)[number]>) {
  for (const level of LEVELS) {
    log[level]('plain %s', 'text');
    log[level](
      { source: 'acme', status: 401, body: 'secret', headers: { 'x-signature': 'sha1=00' } },
      'refused',
    );
    log[level]({ err: BROKEN }, 'unexpected error');
  }
}

describe('LazyRequestLogger', () => {
  it.each(['trace', 'debug', 'info', 'warn', 'silent'])(
    'writes what the eager child writes, parent at %s',
    (level) => {
      const eager = capture(level);
      const lazy = capture(level);
      writeEverything(eager.logger.child({ reqId: 'r-1' }));
      writeEverything(new LazyRequestLogger(lazy.logger, { reqId: 'r-1' }));
      expect(lazy.lines()).toEqual(eager.lines());
      if (level === 'info') {
        expect(lazy.lines()).toHaveLength(12);
        expect(lazy.lines()[1]).toMatchObject({ reqId: 'r-1', body: '[redacted]' });
      }
    },
  );

  it('builds no child while its lines are left out', () => {
    const { logger } = capture('info');
    let children = 0;
    const child = logger.child.bind(logger);
    logger.child = ((...args: Parameters<typeof child>) => {
      children++;
      return child(...args);
    }) as typeof logger.child;
    const lazy = new LazyRequestLogger(logger, { reqId: 'r-2' });
    lazy.debug({ status: 200 }, 'stored');
    lazy.trace('nothing');
    expect(children).toBe(0);
    lazy.info('now');
    lazy.warn('and again');
    expect(children).toBe(1);
  });

  it('takes a level of its own, and gives children with both bindings', () => {
    const { logger, lines } = capture('info');
    const lazy = new LazyRequestLogger(logger, { reqId: 'r-3' });
    expect(lazy.level).toBe('info');
    lazy.level = 'debug';
    lazy.debug('shown');
    lazy.child({ part: 'x' }).info('from a child');
    logger.debug('the parent keeps its level');
    expect(lines()).toEqual([
      expect.objectContaining({ level: 20, reqId: 'r-3', msg: 'shown' }),
      expect.objectContaining({ level: 30, reqId: 'r-3', part: 'x', msg: 'from a child' }),
    ]);
  });

  it('is what fastify hands each request, and an eager child where a route sets a log level', async () => {
    const { logger, lines } = capture('info');
    const app = Fastify({ loggerInstance: logger, childLoggerFactory: lazyChildLoggerFactory });
    app.get('/lazy', async (request) => {
      request.log.info('from the request');
      return { lazy: request.log instanceof LazyRequestLogger };
    });
    app.get('/debug', { logLevel: 'debug' }, async (request) => {
      request.log.debug('route at debug');
      return { lazy: request.log instanceof LazyRequestLogger };
    });
    await app.ready();
    expect((await app.inject('/lazy')).json()).toEqual({ lazy: true });
    expect((await app.inject('/debug')).json()).toEqual({ lazy: false });
    await app.close();
    const mine = lines().filter((l) => String(l.msg).includes('request') || String(l.msg).includes('route'));
    expect(mine.map((l) => l.msg)).toEqual(expect.arrayContaining(['from the request', 'route at debug']));
    expect(mine.every((l) => typeof l.reqId === 'string')).toBe(true);
  });
});
