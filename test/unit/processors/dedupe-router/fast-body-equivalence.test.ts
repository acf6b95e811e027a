// The fast body parse (and the fast write-back of parsed values) is the same function as lossless-json's,
// and the byte-level fast route (fast-route.ts: Avro written from the body's byte ranges) the same as
// route(): every fixture and thousands of generated bodies (whitespace, key order, escapes and unicode,
// long and exotic numbers, nested data, 2 KB+ bodies, duplicate keys, broken JSON, a BOM, bytes that are
// not UTF-8, every trigger) routed once with the fast paths and once with lossless-json alone give
// byte-identical outputs: topics, keys, Avro values, dead-letter reasons and messages.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { LosslessNumber, parse, stringify } from 'lossless-json';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import {
  NOT_HANDLED,
  parseJsonFast,
  stringifyJsonFast,
} from '../../../../processors/dedupe-router/fast-json.js';
import { routeFast } from '../../../../processors/dedupe-router/fast-route.js';
import { type RouteContext, type RouteSettings, route } from '../../../../processors/dedupe-router/route.js';
import type { RawEnvelope } from '../../../../schemas/raw-envelope.js';
import { generateLoad } from '../../../integration/processors-load.js';
import { envelopeFor, FIXTURES_DIR, storedDeliveries } from '../fixtures.js';
import { written } from './written-decision.js';

/** route() with the body parsed and written back by lossless-json alone: the router before the fast paths. */
let routeLossless: typeof route;
beforeAll(async () => {
  vi.resetModules();
  vi.doMock('../../../../processors/dedupe-router/fast-json.js', () => {
    const notHandled = Symbol('not handled');
    return { NOT_HANDLED: notHandled, parseJsonFast: () => notHandled, stringifyJsonFast: () => notHandled };
  });
  routeLossless = (await import('../../../../processors/dedupe-router/route.js')).route;
  vi.doUnmock('../../../../processors/dedupe-router/fast-json.js');
});

const SETTINGS: RouteSettings = {
  webhookDateOffsetMinutes: 60,
  maxAgeMs: 72 * 3_600_000,
  maxAheadMs: 60_000,
};

/** Routes with route() and with the fast route (when it takes the body on): both as lossless-json alone. */
function expectSameRoute(
  envelope: RawEnvelope,
  settings: RouteSettings = SETTINGS,
  context: RouteContext = {},
): 'fast' | 'reference' {
  const decision = route(envelope, settings, context);
  let expected: ReturnType<typeof written>;
  try {
    expected = written(routeLossless(envelope, settings, context));
  } catch (error) {
    // An event Avro cannot hold (an integer avsc refuses as a long): the runtime dead-letters the record
    // when encoding fails. The fast route leaves it to route(), whose value fails the same way.
    expect(String(error)).toMatch(/invalid/);
    expect(() => written(decision)).toThrow();
    expect(routeFast(envelope, settings, context)).toBeUndefined();
    return 'reference';
  }
  expect(written(decision)).toEqual(expected);
  const kind = `${decision.kind} ${decision.reason ?? decision.outputs.map((o) => o.topic).join(' ')}`;
  reached.set(kind, (reached.get(kind) ?? 0) + 1);
  const fast = routeFast(envelope, settings, context);
  if (fast === undefined) return 'reference';
  expect(written(fast)).toEqual(expected);
  fastReached.set(kind, (fastReached.get(kind) ?? 0) + 1);
  return 'fast';
}

/**
 * A value as plain data that shows everything the router could tell apart: each object's prototype and
 * its own keys in order, each number's class and text. (toStrictEqual would not see key order, and
 * reads an own key `constructor` as the object's class.)
 */
function canonical(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (value instanceof LosslessNumber) return { number: value.value };
  if (Array.isArray(value)) return { array: value.map(canonical) };
  return {
    prototype: Object.getPrototypeOf(value) === Object.prototype ? 'Object' : 'other',
    entries: Object.keys(value).map((k) => [k, canonical((value as Record<string, unknown>)[k])]),
  };
}

/** Text-level: the fast parse answers lossless-json's value, or leaves the text to it. */
function expectSameParse(text: string): 'fast' | 'lossless' {
  const fast = parseJsonFast(text);
  let expected: unknown;
  try {
    expected = parse(text);
  } catch {
    expect(fast).toBe(NOT_HANDLED);
    return 'lossless';
  }
  if (fast === NOT_HANDLED) return 'lossless';
  // Written back (an event's `data`) as lossless-json writes it.
  expect(stringifyJsonFast(expected)).toBe(stringify(expected));
  // Types, prototypes, number texts and key order (an event's `data` is the text written back).
  expect(canonical(fast)).toEqual(canonical(expected));
  return 'fast';
}

// ---- generated bodies ----

/** A number's text as a platform may send it: long, exotic, exact. */
const numberText = fc.stringMatching(/^-?(0|[1-9][0-9]{0,40})(\.[0-9]{1,25})?([eE][+-]?[0-9]{1,3})?$/);
const unicodeText = fc.string({ unit: 'grapheme', maxLength: 30 });
const anyText = fc.oneof(
  fc.string({ maxLength: 20 }),
  unicodeText,
  // Any code point, lone surrogates too (fast-check's `unit: 'binary'` builds a table first: seconds under load).
  fc.string({
    unit: fc.integer({ min: 0, max: 0x10ffff }).map((c) => String.fromCodePoint(c)),
    maxLength: 10,
  }),
  // The characters JSON escapes or that are easy to get wrong: quotes, controls, lone surrogates, U+2028.
  fc
    .array(
      fc.constantFrom(
        'é',
        '\u2028',
        '\ud800',
        '\udc00',
        '"',
        '\\',
        '\n',
        '\u0000',
        '\u001f',
        '/',
        '€',
        '😀',
        'a',
      ),
      {
        maxLength: 8,
      },
    )
    .map((parts) => parts.join('')),
  fc.constantFrom('', '__proto__', 'constructor', '__typename', 'id', '1', '007'),
);

/** A JSON value tree whose numbers are kept as text, rendered later with chosen whitespace and escapes. */
type Tree = { n: string } | { s: string } | boolean | null | { a: Tree[] } | { o: [string, Tree][] };

const tree: fc.Arbitrary<Tree> = fc.letrec<{ tree: Tree }>((tie) => ({
  tree: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    numberText.map((n) => ({ n })),
    anyText.map((s) => ({ s })),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('tree'), { maxLength: 5 }).map((a) => ({ a })),
    fc.array(fc.tuple(anyText, tie('tree')), { maxLength: 6 }).map((o) => ({ o })),
  ),
})).tree;

const whitespace = fc.constantFrom('', '', ' ', '\n', '\r\n  ', '\t');

interface Style {
  ws: string;
  /** Escape every non-ASCII character (\\uXXXX) and every `/`. */
  escapeAll: boolean;
}

function renderString(s: string, style: Style): string {
  const json = JSON.stringify(s);
  if (!style.escapeAll) return json;
  return json.replace(/[^\x20-\x7e]|\//g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function render(t: Tree, style: Style): string {
  const w = style.ws;
  if (t === null) return 'null';
  if (typeof t === 'boolean') return String(t);
  if ('n' in t) return t.n;
  if ('s' in t) return renderString(t.s, style);
  if ('a' in t) return `[${w}${t.a.map((x) => render(x, style)).join(`${w},${w}`)}${w}]`;
  return `{${w}${t.o.map(([k, v]) => `${renderString(k, style)}${w}:${w}${render(v, style)}`).join(`,${w}`)}${w}}`;
}

const TRIGGERS = [
  'UserAdded',
  'UserDeleted',
  'AccountUpdated',
  'DocumentAdded',
  'ToDoDone',
  'EnergySwitchAdded',
  'EnergySwitchUpdated',
  'EnergySwitchDeleted',
  'PaymentAdded',
  'UserProfileUpdated',
  'EnergySwitchQuoteAdded',
  'Ping',
];

/** A body shaped like a delivery, with a record of generated fields (EnergySwitch fields among them). */
const deliveryBody = fc
  .record({
    id: fc.oneof(fc.constant('wh_1'), anyText),
    trigger: fc.constantFrom(...TRIGGERS),
    date: fc.constantFrom(
      '2026-11-22T09:00:00Z',
      '2026-11-22T09:00:00.123456+01:00',
      '2026-11-22T09:00:00',
      '2026-02-30T00:00:00Z',
      'yesterday',
    ),
    typename: fc.constantFrom(
      'EnergySwitch',
      'User',
      'OperationFailure',
      'Payment',
      '',
      'UserProfile',
      'EnergySwitchQuote',
    ),
    entityId: fc.oneof(
      anyText.map((s) => ({ s }) as Tree),
      numberText.map((n) => ({ n }) as Tree),
    ),
    fields: fc.array(fc.tuple(anyText, tree), { maxLength: 6 }),
    energy: fc.record({
      amount: numberText,
      fuels: numberText,
      status: anyText,
      statusDate: fc.constantFrom('2026-11-22T09:00:00Z', '2026-11-22', 'x'),
    }),
    variables: fc.option(fc.array(fc.tuple(anyText, tree), { maxLength: 3 })),
    errors: fc.option(fc.array(tree, { maxLength: 2 })),
    padding: fc.option(fc.string({ minLength: 2048, maxLength: 3000 })),
    shuffle: fc.boolean(),
    ws: whitespace,
    escapeAll: fc.boolean(),
  })
  .map((b) => {
    const record: [string, Tree][] = [['__typename', { s: b.typename }], ['id', b.entityId], ...b.fields];
    if (b.typename === 'EnergySwitch') {
      record.push(
        [
          'savings',
          {
            o: [
              ['currency', { s: 'GBP' }],
              ['amount', { n: b.energy.amount }],
            ],
          },
        ],
        [
          'commission',
          {
            o: [
              ['status', { s: b.energy.status }],
              ['statusDate', { s: b.energy.statusDate }],
              ['fuelsWithCommissionExpected', { n: b.energy.fuels }],
            ],
          },
        ],
      );
    }
    if (b.padding !== null) record.push(['notes', { s: b.padding }]);
    const top: [string, Tree][] = [
      [
        'webhook',
        {
          o: [
            ['id', { s: b.id }],
            ['trigger', { s: b.trigger }],
            ['date', { s: b.date }],
          ],
        },
      ],
      ['query', { o: b.variables === null ? [] : [['variables', { o: b.variables }]] }],
      ['data', { o: [['getThing', { o: b.shuffle ? [...record].reverse() : record }]] }],
    ];
    if (b.errors !== null) top.push(['errors', { a: b.errors }]);
    return render({ o: b.shuffle ? [...top].reverse() : top }, { ws: b.ws, escapeAll: b.escapeAll });
  });

/**
 * Keys the fast route takes on (no escape, dot, leading digit or `__proto__`), unicode among them, and a
 * few it leaves to route() (a dot, a digit first, an escape when rendered with escapeAll).
 */
const plainKey = fc.oneof(
  { weight: 40, arbitrary: fc.stringMatching(/^[a-zA-Z_][a-zA-Z0-9_]{0,12}$/) },
  { weight: 10, arbitrary: fc.constantFrom('id', '__typename', 'name', 'amount', 'café', '名前', 'emoji😀') },
  { weight: 1, arbitrary: fc.constantFrom('a.b', '1', '', '__proto__', 'x"y', 'tab\t') },
);

/** A JSON tree over plain keys: values of every kind (escapes, unicode, exotic numbers) and nested records. */
const plainTree: fc.Arbitrary<Tree> = fc.letrec<{ tree: Tree }>((tie) => ({
  tree: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    numberText.map((n) => ({ n })),
    anyText.map((s) => ({ s })),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('tree'), { maxLength: 4 }).map((a) => ({ a })),
    fc
      .array(fc.tuple(plainKey, tie('tree')), { maxLength: 5 })
      .map((o) => ({ o: o.filter(([k], n) => o.findIndex(([other]) => other === k) === n) })),
  ),
})).tree;

/** Every trigger family of the contract, and names route() alone takes (deletions, energy switches). */
const FAST_TRIGGERS = [
  'UserAdded',
  'UserUpdated',
  'AccountAdded',
  'AccountUpdated',
  'DocumentAdded',
  'ToDoAdded',
  'ToDoDone',
  'PaymentAdded',
  'SMSSent',
  'UserProfileUpdated',
  'EnergySwitchQuoteAdded',
  'EnergySwitchAdded',
  'EnergySwitchUpdated',
  'UserDeleted',
  'Ping',
];

/** An EnergySwitch's typed fields (contract §2.2): mostly of their type, sometimes null or of another. */
const typedString = fc.oneof(
  { weight: 14, arbitrary: fc.stringMatching(/^[A-Za-z0-9 _-]{0,12}$/).map((s) => ({ s }) as Tree) },
  { weight: 2, arbitrary: anyText.map((s) => ({ s }) as Tree) },
  { weight: 1, arbitrary: fc.constant<Tree>(null) },
  { weight: 1, arbitrary: fc.constantFrom<Tree>({ n: '1' }, true, { a: [] }, { o: [] }) },
);
const typedInteger = fc.oneof(
  { weight: 14, arbitrary: fc.integer({ min: -1000, max: 100_000 }).map((n) => ({ n: String(n) }) as Tree) },
  {
    weight: 2,
    arbitrary: fc.constantFrom<Tree>(
      { n: '007' },
      { n: '-0' },
      { n: '9007199254740991' },
      { n: '-9007199254740991' },
      { n: '9007199254740993' },
      { n: '1.0' },
      { n: '1e3' },
    ),
  },
  { weight: 1, arbitrary: fc.constant<Tree>(null) },
  { weight: 1, arbitrary: fc.constantFrom<Tree>({ s: '1' }, false, { o: [] }) },
  // Other representations route() reads as the integer (the fast route leaves them to it), and near misses.
  {
    weight: 1,
    arbitrary: fc.constantFrom<Tree>(
      { n: '2.0' },
      { n: '2e0' },
      { n: '20e-1' },
      { n: '-3.000E+0' },
      { n: '9007199254740990.0' },
      { s: '2' },
      { s: '-3' },
      { s: '0' },
      { n: '2.0000000000000001' },
      { n: '1e16' },
      { n: '9007199254740993' },
      { s: 'two' },
      { s: '2.5' },
      { s: '2.0' },
      { s: '2 ' },
      { s: '+2' },
      { s: '9007199254740993' },
    ),
  },
);
const typedAmount = fc.oneof(
  { weight: 14, arbitrary: numberText.map((n) => ({ n }) as Tree) },
  { weight: 1, arbitrary: fc.constantFrom<Tree>(null, { s: '210.10' }, { a: [] }) },
  // A decimal string, which route() reads as its text (the fast route leaves it to route()), and strings that are no number.
  { weight: 1, arbitrary: numberText.map((n) => ({ s: n }) as Tree) },
  {
    weight: 1,
    arbitrary: fc.constantFrom<Tree>(
      { s: '1,000.00' },
      { s: '£210.10' },
      { s: ' 1.00' },
      { s: '1.00 ' },
      { s: '' },
      { s: '.5' },
      { s: '1.' },
      { s: '+1' },
      { s: '01' },
      { s: 'NaN' },
    ),
  },
);
const typedDate = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.constantFrom<Tree>(
      { s: '2026-11-22T09:00:00Z' },
      { s: '2026-11-22T09:00:00.5+01:00' },
      { s: '2026-11-22t09:00:00,25-0500' },
    ),
  },
  {
    weight: 2,
    arbitrary: fc.constantFrom<Tree>({ s: '2026-11-22T09:00:00' }, { s: '2026-02-30T00:00:00Z' }, { s: 'x' }),
  },
  { weight: 1, arbitrary: fc.constantFrom<Tree>(null, { n: '1' }) },
);
/** A typed object: some of its fields (and sometimes `__typename` or a field beyond the contract), or null, or not an object. */
const typedObject = (fields: Record<string, fc.Arbitrary<Tree>>) =>
  fc.oneof(
    {
      weight: 14,
      arbitrary: fc
        .tuple(
          fc.record(fields, { requiredKeys: [] }),
          fc.constantFrom<[string, Tree][]>([], [], [['__typename', { s: 'T' }]], [['extra', { a: [] }]]),
        )
        .map(([picked, more]) => ({ o: [...more, ...(Object.entries(picked) as [string, Tree][])] }) as Tree),
    },
    { weight: 1, arbitrary: fc.constantFrom<Tree>(null, { s: 'x' }, { a: [] }) },
  );
const energyFields = fc
  .record(
    {
      date: typedString,
      userSwitchReferenceId: typedString,
      postcode: typedString,
      tariffName: typedString,
      fuelType: typedString,
      fuelsSwitched: typedInteger,
      user: typedObject({
        id: typedString,
        tenantId: fc.oneof({ weight: 3, arbitrary: typedString }, { weight: 1, arbitrary: typedAmount }),
      }),
      provider: typedObject({ code: typedString, name: typedString }),
      projectedSpend: typedObject({ currency: typedString, amount: typedAmount }),
      savings: typedObject({ currency: typedString, amount: typedAmount }),
      commission: typedObject({
        fuelsWaitingForUpdate: typedInteger,
        fuelsWithSwitchTerminated: typedInteger,
        fuelsWithCommissionExpected: typedInteger,
        fuelsWithCommissionReceived: typedInteger,
        statusDate: typedDate,
        status: typedString,
      }),
    },
    { requiredKeys: [] },
  )
  .map((fields) => Object.entries(fields) as [string, Tree][]);

/** A delivery the fast route can take on (most of them): the bench's shape, varied every way route() reads. */
const deliveryWith = (triggers: readonly string[]) =>
  fc
    .record({
      trigger: fc.constantFrom(...triggers),
      date: fc.constantFrom(
        '2026-11-22T09:00:00Z',
        '2026-11-22T09:00:00.123456+01:00',
        '2026-11-22T09:00:00',
        '2026-11-22T08:59:59.5Z',
        '2026-11-25T09:00:00Z',
        '2026-11-18T09:00:00Z',
      ),
      typename: fc.oneof(
        { weight: 8, arbitrary: fc.constantFrom('User', 'Account', 'Payment', 'Document') },
        { weight: 1, arbitrary: fc.constantFrom('UserProfile', 'EnergySwitchQuote') },
        { weight: 1, arbitrary: fc.constantFrom('OperationFailure', '') },
      ),
      entityId: fc.oneof(
        { weight: 6, arbitrary: fc.stringMatching(/^[a-z0-9_-]{1,12}$/).map((s) => ({ s }) as Tree) },
        { weight: 2, arbitrary: unicodeText.map((s) => ({ s }) as Tree) },
        { weight: 2, arbitrary: numberText.map((n) => ({ n }) as Tree) },
        { weight: 1, arbitrary: fc.constantFrom<Tree>({ s: '' }, null, true) },
      ),
      idAbsent: fc.integer({ min: 0, max: 9 }).map((k) => k === 0),
      fields: fc.array(fc.tuple(plainKey, plainTree), { maxLength: 6 }),
      energy: energyFields,
      webhookId: fc.oneof(
        { weight: 6, arbitrary: fc.constant('wh_1') },
        { weight: 3, arbitrary: fc.constantFrom('wh_é', 'ид-1', '😀', 'a"b', 'x'.repeat(80)) },
        { weight: 1, arbitrary: unicodeText.filter((s) => s !== '') },
      ),
      idMismatch: fc.integer({ min: 0, max: 19 }).map((k) => k === 0),
      energyTypename: fc.integer({ min: 0, max: 9 }).map((k) => k !== 0),
      query: fc.oneof(
        fc.constant<'absent' | 'null' | 'empty'>('absent'),
        fc.constant<'absent' | 'null' | 'empty'>('null'),
        fc.constant<'absent' | 'null' | 'empty'>('empty'),
        fc.record({
          // Absent is undefined (here and for variables): fc.option's default, null, is also the JSON null,
          // so `"api": null` was never sent.
          api: fc.option(
            fc.oneof(
              { weight: 8, arbitrary: fc.constant<Tree>({ s: 'https://api.example/graphql' }) },
              { weight: 2, arbitrary: fc.constant<Tree>(null) },
              { weight: 1, arbitrary: fc.constant<Tree>({ n: '1' }) },
            ),
            { nil: undefined },
          ),
          // query.query: null is as good as absent (route() takes it; the fast route leaves it to route()).
          text: fc.oneof(
            { weight: 8, arbitrary: fc.constant<Tree | undefined>({ s: 'query Q($id: ID!) { q }' }) },
            { weight: 2, arbitrary: fc.constant<Tree | undefined>(null) },
            { weight: 1, arbitrary: fc.constantFrom<Tree | undefined>(undefined, { n: '1' }) },
          ),
          variables: fc.option(
            fc.oneof(
              fc.array(fc.tuple(plainKey, plainTree), { maxLength: 3 }).map((o) => ({ o }) as Tree),
              fc.constant<Tree>(null),
            ),
            { nil: undefined },
          ),
        }),
      ),
      errors: fc.oneof(
        { weight: 6, arbitrary: fc.constantFrom<Tree | undefined>(undefined, null, { a: [] }) },
        { weight: 1, arbitrary: fc.constant<Tree | undefined>({ a: [{ s: 'x' }] }) },
      ),
      introspection: fc.boolean(),
      extraTop: fc.option(plainTree),
      padding: fc.option(fc.string({ minLength: 2048, maxLength: 3000 })),
      shuffle: fc.boolean(),
      ws: whitespace,
      escapeAll: fc.integer({ min: 0, max: 3 }).map((k) => k === 0),
    })
    .map((b) => {
      const energy = b.trigger.startsWith('EnergySwitch');
      const typename = energy && b.energyTypename ? 'EnergySwitch' : b.typename;
      const record: [string, Tree][] = [['__typename', { s: typename }]];
      if (!b.idAbsent) record.push(['id', b.entityId]);
      const typed = energy ? b.energy : [];
      record.push(
        ...b.fields.filter(([k]) => k !== 'id' && k !== '__typename' && !typed.some(([t]) => t === k)),
        ...typed,
      );
      if (b.padding !== null) record.push(['notes', { s: b.padding }]);
      const data: [string, Tree][] = [['getThing', { o: b.shuffle ? [...record].reverse() : record }]];
      if (b.introspection) data.unshift(['__typename', { s: 'Query' }]);
      const top: [string, Tree][] = [
        [
          'webhook',
          {
            o: [
              ['id', { s: b.webhookId }],
              ['trigger', { s: b.trigger }],
              ['date', { s: b.date }],
            ],
          },
        ],
        ['data', { o: data }],
      ];
      if (b.query === 'null') top.push(['query', null]);
      else if (b.query === 'empty') top.push(['query', { o: [] }]);
      else if (b.query !== 'absent') {
        const query: [string, Tree][] = b.query.text === undefined ? [] : [['query', b.query.text]];
        if (b.query.api !== undefined) query.push(['api', b.query.api]);
        if (b.query.variables !== undefined) query.push(['variables', b.query.variables]);
        top.push(['query', { o: query }]);
      }
      if (b.errors !== undefined) top.push(['errors', b.errors]);
      if (b.extraTop !== null) top.push(['extensions', b.extraTop]);
      return {
        text: render({ o: b.shuffle ? [...top].reverse() : top }, { ws: b.ws, escapeAll: b.escapeAll }),
        // The raw record's id: the body's, or (rarely) another one.
        webhookId: b.idMismatch ? 'wh_other' : b.webhookId,
      };
    });
const plainDelivery = deliveryWith(FAST_TRIGGERS);
/** Energy switches alone: the typed event and the commission event, every typed field varied. */
const energyDelivery = deliveryWith(['EnergySwitchAdded', 'EnergySwitchUpdated']);

/**
 * Typed values route() reads from another representation than the plain one (a money amount as a string,
 * an integer with a fraction or exponent or as a string, a null query.api or query.query), and how many
 * deliveries with each the energy-switch run routes at least: compared on their events, not only on a
 * dead letter. (The query's are rarer: only one body in four has a query object with members.)
 */
const OTHER_REPRESENTATIONS: [string, RegExp, number][] = [
  ['an amount as a string', /"(savings|projectedSpend)"\s*:\s*\{[^{}]*"amount"\s*:\s*"/, 15],
  ['an integer written otherwise', /"fuels[A-Za-z]+"\s*:\s*("|-?\d+[.eE])/, 30],
  ['a null query.api', /"api"\s*:\s*null/, 4],
  // Inside the query object (a top-level `"query": null` was always taken): before api or variables, or its end.
  ['a null query.query', /"query"\s*:\s*null\s*(,\s*"(api|variables)"|\}\s*[,}])/, 4],
];

/** Ways a body goes wrong: cut short, a character dropped or added, a key given twice, a BOM, bad bytes. */
const damaged = fc
  .tuple(deliveryBody, fc.nat(), fc.constantFrom('cut', 'drop', 'insert', 'duplicate', 'bom', 'bytes'))
  .map(([text, at, how]): Buffer => {
    const p = text.length === 0 ? 0 : at % text.length;
    const bytes = Buffer.from(text, 'utf8');
    switch (how) {
      case 'cut':
        return Buffer.from(text.slice(0, p));
      case 'drop':
        return Buffer.from(text.slice(0, p) + text.slice(p + 1));
      case 'insert':
        return Buffer.from(`${text.slice(0, p)}${'",:{}[]0-e \\u'[at % 15]}${text.slice(p)}`);
      case 'duplicate':
        return Buffer.from(text.replace('"webhook"', '"data":null,"webhook"'));
      case 'bom':
        return Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), bytes]);
      default:
        return Buffer.concat([bytes.subarray(0, p % (bytes.length + 1)), Buffer.from([0xc3, 0x28])]);
    }
  });

// Received an hour after the generated webhook.date: inside WEBHOOK_MAX_AGE, so routing goes all the way.
const envelopeOf = (body: Buffer): RawEnvelope => ({
  ...envelopeFor('{}'),
  webhookId: 'wh_1',
  receivedAt: Date.parse('2026-11-22T10:00:00Z'),
  body,
});

/** How many decisions of each kind (and dead-letter reason) the generated bodies reached. */
const reached = new Map<string, number>();
/** The same, of the decisions the fast route took on. */
const fastReached = new Map<string, number>();

describe('the fast body parse routes as lossless-json does', () => {
  it('every fixture body: the same outputs, byte for byte', () => {
    const bodies = readdirSync(FIXTURES_DIR).filter((f) => f.endsWith('.body'));
    expect(bodies.length).toBeGreaterThan(20);
    let fast = 0;
    for (const file of bodies) {
      const body = readFileSync(path.join(FIXTURES_DIR, file));
      if (expectSameParse(body.toString('utf8')) === 'fast') fast++;
      for (const id of [
        'wh_1',
        (() => {
          try {
            return JSON.parse(body.toString('utf8')).webhook.id as string;
          } catch {
            return 'none';
          }
        })(),
      ])
        expectSameRoute({ ...envelopeOf(body), webhookId: id ?? 'none' });
    }
    // The fast parse takes on every fixture that is JSON (one is not).
    expect(fast).toBe(bodies.length - 1);
  });

  it('generated deliveries: the same outputs, and the fast parse takes most of them', () => {
    let fast = 0;
    let runs = 0;
    fc.assert(
      fc.property(deliveryBody, (text) => {
        runs++;
        if (expectSameParse(text) === 'fast') fast++;
        expectSameRoute(envelopeOf(Buffer.from(text, 'utf8')));
      }),
      { numRuns: 2000 },
    );
    // Routed to every entity stream, failures and the commission stream, not only dead-lettered.
    const kinds = [...reached.keys()].join('\n');
    for (const topic of [
      'entity.user',
      'entity.other',
      'entity.energy-switch-commission',
      'webhooks.failures',
    ])
      expect(kinds).toContain(topic);
    // The rest have a key given twice or a key `__proto__` (the generated keys often do): lossless-json's.
    expect(fast / runs).toBeGreaterThan(0.4);
  }, 60_000);

  it('deliveries of the common shape: the fast route writes the same bytes, and takes most of them', () => {
    let fast = 0;
    let runs = 0;
    fastReached.clear();
    fc.assert(
      fc.property(plainDelivery, fc.boolean(), ({ text, webhookId }, approved) => {
        runs++;
        const envelope = { ...envelopeOf(Buffer.from(text, 'utf8')), webhookId };
        if (expectSameRoute(envelope, SETTINGS, { operatorApproved: approved }) === 'fast') fast++;
      }),
      // An energy switch goes fast in about one run in 300 with or without a commission (every typed field
      // plain): 6,000 runs reach each about 20 times, where 3,000 once reached one of them none.
      { numRuns: 6000 },
    );
    // Every entity stream, the energy switch's with and without a commission event, from the fast route.
    const kinds = [...fastReached.keys()];
    for (const topic of ['entity.user', 'entity.account', 'entity.document', 'entity.todo', 'entity.other'])
      expect(kinds.join('\n')).toContain(topic);
    expect(kinds).toContain('routed webhooks.unique entity.energy-switch');
    expect(kinds).toContain('routed webhooks.unique entity.energy-switch entity.energy-switch-commission');
    expect(fast / runs).toBeGreaterThan(0.15);
  }, 120_000);

  it('energy switches of the common shape: the typed and commission events are the same bytes', () => {
    let fast = 0;
    fastReached.clear();
    const otherRepresentations = new Map<string, number>();
    fc.assert(
      fc.property(energyDelivery, ({ text, webhookId }) => {
        const envelope = { ...envelopeOf(Buffer.from(text, 'utf8')), webhookId };
        if (expectSameRoute(envelope) === 'fast') fast++;
        // route() takes these and the fast route leaves them to it: count the ones that reached an event.
        for (const [name, pattern] of OTHER_REPRESENTATIONS)
          if (pattern.test(text) && route(envelope, SETTINGS).kind === 'routed')
            otherRepresentations.set(name, (otherRepresentations.get(name) ?? 0) + 1);
      }),
      // More runs than before the other representations, which the fast route leaves to route(): as many fast.
      { numRuns: 6000 },
    );
    for (const [name, , atLeast] of OTHER_REPRESENTATIONS)
      expect(otherRepresentations.get(name) ?? 0, name).toBeGreaterThanOrEqual(atLeast);
    expect(fastReached.get('routed webhooks.unique entity.energy-switch') ?? 0).toBeGreaterThan(20);
    expect(
      fastReached.get('routed webhooks.unique entity.energy-switch entity.energy-switch-commission') ?? 0,
    ).toBeGreaterThan(20);
    // Most generated bodies vary something route() alone takes (see plainDelivery): enough still go fast.
    expect(fast).toBeGreaterThan(80);
  }, 120_000);

  it("the bench's load and the fixtures: the fast route takes on every delivery of the load", () => {
    const load = generateLoad({ ids: 300, retries: 60, startAt: Date.parse('2026-11-22T10:00:00Z') });
    let fast = 0;
    for (const envelope of load.envelopes) if (expectSameRoute(envelope) === 'fast') fast++;
    expect(fast).toBe(load.envelopes.length);
    // Received a moment after their dates, with a name that is not the body's id, under another source.
    for (const { envelope } of storedDeliveries())
      for (const receivedAt of [envelope.receivedAt, Date.parse('2026-11-20T00:00:00Z')])
        for (const source of [envelope.source, 'ünïcode', 'lone\ud800'])
          expectSameRoute({ ...envelope, receivedAt, source, ingestId: `${envelope.ingestId}é` });
  });

  it('a trigger as long as the sender likes: the same outputs from both routes, in one pass over it', () => {
    // Each of these held the router for minutes while a regular expression backtracked over the capitals.
    const long = 'A'.repeat(200_000);
    for (const [trigger, entity, action] of [
      [`${long}1`, 'A'.repeat(199_999), 'A1'],
      [`Payment${long}`, 'Payment', long],
      [`${long}ddedX`, undefined, undefined],
    ] as const) {
      const text = JSON.stringify({
        webhook: { id: 'wh_1', trigger, date: '2026-11-22T09:00:00Z' },
        query: { variables: { id: 'p_1' } },
        data: { getPayment: { __typename: 'Payment', id: 'p_1' } },
      });
      const envelope = envelopeOf(Buffer.from(text, 'utf8'));
      expect(expectSameRoute(envelope)).toBe('fast');
      const decision = route(envelope, SETTINGS);
      if (entity === undefined) {
        expect(decision.kind).toBe('routed');
        continue;
      }
      const event = decision.outputs.find((o) => o.topic === 'entity.other')!.value as {
        entity: string;
        action: string;
      };
      expect([event.entity.length, event.action]).toEqual([entity.length, action]);
    }
  });

  it('a record whose field paths outgrow the entity topics: dead-lettered before they are built, by both routes alike', () => {
    // Each level's key repeats in every path below it: 1.6 MB of body, 321 MB of paths.
    let record = '{"__typename":"Payment","id":"p_1"}';
    for (let level = 0; level < 400; level++)
      record = `{"__typename":"Payment","id":"p_1","${'k'.repeat(1_999)}${level % 10}":${record}}`;
    const text = `{"webhook":{"id":"wh_1","trigger":"PaymentAdded","date":"2026-11-22T09:00:00Z"},"data":{"getPayment":${record}}}`;
    const envelope = envelopeOf(Buffer.from(text, 'utf8'));
    expect(expectSameRoute(envelope)).toBe('reference');
    const decision = route(envelope, SETTINGS);
    expect(decision.reason).toBe('output-too-large');
    const letter = decision.outputs.find((o) => o.topic === 'webhooks.dlq')!.value as { message: string };
    expect(letter.message).toMatch(
      /^data\.getPayment: the dotted paths of its fields total more than 2162688 bytes/,
    );

    // A small record against a small limit: the fast route takes it while its paths fit, route() from there.
    const small = envelopeOf(
      Buffer.from(
        '{"webhook":{"id":"wh_1","trigger":"PaymentAdded","date":"2026-11-22T09:00:00Z"},"data":{"getPayment":{"__typename":"Payment","id":"p_1","amount":{"value":1}}}}',
      ),
    );
    // Paths `id` and `amount.value`: 14 bytes.
    expect(expectSameRoute(small, { ...SETTINGS, maxEntityEventBytes: 14 })).toBe('fast');
    expect(expectSameRoute(small, { ...SETTINGS, maxEntityEventBytes: 13 })).toBe('reference');
    expect(route(small, { ...SETTINGS, maxEntityEventBytes: 13 }).reason).toBe('output-too-large');
  });

  it('damaged deliveries: the same outputs and dead-letter reasons', () => {
    fc.assert(
      fc.property(damaged, (body) => {
        expectSameParse(body.toString('utf8'));
        expectSameRoute(envelopeOf(body));
      }),
      { numRuns: 1000 },
    );
  }, 60_000);

  it('any JSON text: the same value, or left to lossless-json', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.json(),
          fc.tuple(tree, whitespace, fc.boolean()).map(([t, ws, escapeAll]) => render(t, { ws, escapeAll })),
        ),
        (text) => {
          expectSameParse(text);
        },
      ),
      { numRuns: 2000 },
    );
  }, 60_000);
});
